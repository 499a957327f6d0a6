"""Gymnasium where it is installed, and nothing of it where it is not:
metadata["autoreset_mode"] and a gymnasium.vector.VectorEnv adapter, so
Gymnasium's vector wrappers (RecordEpisodeStatistics, ...) take a VecEnv."""

import functools


def autoreset_mode():
    """gymnasium.vector.AutoresetMode.NEXT_STEP where Gymnasium has it (1.1
    on; its wrappers check for the enum), else the string "next_step"."""
    try:
        from gymnasium.vector import AutoresetMode
    except ImportError:
        return "next_step"
    return AutoresetMode.NEXT_STEP


def gymnasium_vector_env(envs):
    """`envs` (a VecEnv) as a gymnasium.vector.VectorEnv: the same envs, with
    gymnasium.spaces spaces, for Gymnasium's vector wrappers. Closing either
    closes both. Needs Gymnasium 1.x."""
    return _adapter_class()(envs)


@functools.lru_cache(maxsize=None)
def _adapter_class():
    import gymnasium
    from gymnasium.vector.utils import batch_space

    class GymnasiumVecEnv(gymnasium.vector.VectorEnv):
        """A VecEnv seen through gymnasium.vector.VectorEnv."""

        def __init__(self, envs):
            self.envs = envs
            self.num_envs = envs.num_envs
            self.metadata = {"autoreset_mode": autoreset_mode()}
            obs, act = envs.gymnasium_spaces()
            self.single_observation_space, self.single_action_space = obs, act
            self.observation_space = batch_space(obs, envs.num_envs)
            self.action_space = batch_space(act, envs.num_envs)

        def reset(self, *, seed=None, options=None):
            return self.envs.reset(seed=seed, options=options)

        def step(self, actions):
            return self.envs.step(actions)

        def close_extras(self, **kwargs):
            self.envs.close()

    return GymnasiumVecEnv
