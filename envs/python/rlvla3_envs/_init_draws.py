"""Each env's own stream of initial-state ids, for every episode the VecEnv
starts (resets and auto-resets alike).

Draw k of env i is a hash of (env i's seed, i, k): what an env starts from
depends on its seed and on how many episodes it has started since, never on
the order envs come back in nor on the thread count. reset(seed=s) reseeds
the envs it resets (draw 0 is that reset's, draws 1, 2, ... the episodes
after it), so the same seed gives the same episodes."""

import numpy as np

_U64 = np.uint64


def _mix(x):
    """SplitMix64's finalizer: a bijection of uint64 that scatters bits."""
    x = (x ^ (x >> _U64(30))) * _U64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> _U64(27))) * _U64(0x94D049BB133111EB)
    return x ^ (x >> _U64(31))


def check_seeds(seed, n):
    """`seed` (an int, or one per env) as n non-negative uint64s."""
    seeds = np.asarray(seed)
    if seeds.dtype.kind not in "iu" or seeds.ndim > 1:
        raise ValueError("seed: an int, or a list of ints (one per env)")
    if seeds.ndim == 1 and seeds.shape != (n,):
        raise ValueError("seed: {} seeds for {} envs".format(len(seeds), n))
    if (seeds < 0).any():
        raise ValueError("seed = {}: must be >= 0".format(seed))
    return np.broadcast_to(seeds.astype(_U64), (n,))


class InitDraws:
    def __init__(self, num_envs, seed, first, count):
        self._first, self._count = first, count
        self._env = np.arange(num_envs, dtype=_U64)
        self._seed = np.full(num_envs, seed, dtype=_U64)
        self._drawn = np.zeros(num_envs, dtype=_U64)

    def reseed(self, ids, seed):
        """Restarts the streams of envs `ids` (distinct) from `seed`."""
        self._seed[ids] = check_seeds(seed, len(ids))
        self._drawn[ids] = 0

    def draw(self, ids):
        """The next initial state of each env of `ids` (distinct), int32."""
        with np.errstate(over="ignore"):
            h = _mix(_mix(_mix(self._seed[ids]) + self._env[ids])
                     + self._drawn[ids])
        self._drawn[ids] += _U64(1)
        return (self._first + h % _U64(self._count)).astype(np.int32)
