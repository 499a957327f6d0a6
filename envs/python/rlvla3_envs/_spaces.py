"""Gymnasium-shaped space descriptions, without needing Gymnasium: Box and
Dict with shape, dtype, bounds, contains() and sample(). VecEnv.gymnasium_spaces()
gives gymnasium.spaces objects where Gymnasium is installed."""

import numpy as np


class Box:
    def __init__(self, low, high, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.low = np.full(self.shape, low, dtype=self.dtype)
        self.high = np.full(self.shape, high, dtype=self.dtype)

    def contains(self, x):
        x = np.asarray(x)
        return (x.shape == self.shape and x.dtype == self.dtype
                and bool(np.all(x >= self.low)) and bool(np.all(x <= self.high)))

    def sample(self, rng=None):
        rng = rng or np.random.default_rng()
        if np.issubdtype(self.dtype, np.integer):
            return rng.integers(self.low, self.high, endpoint=True,
                                dtype=self.dtype)
        return rng.uniform(self.low, self.high).astype(self.dtype)

    def to_gymnasium(self):
        import gymnasium
        return gymnasium.spaces.Box(self.low, self.high, self.shape, self.dtype)

    def __repr__(self):
        return "Box({}, {}, {}, {})".format(
            self.low.flat[0] if self.low.size else None,
            self.high.flat[0] if self.high.size else None, self.shape,
            self.dtype)


class Dict:
    def __init__(self, spaces):
        self.spaces = dict(spaces)

    def __getitem__(self, key):
        return self.spaces[key]

    def keys(self):
        return self.spaces.keys()

    def contains(self, x):
        return (isinstance(x, dict) and set(x) == set(self.spaces)
                and all(s.contains(x[k]) for k, s in self.spaces.items()))

    def sample(self, rng=None):
        rng = rng or np.random.default_rng()
        return {k: s.sample(rng) for k, s in self.spaces.items()}

    def to_gymnasium(self):
        import gymnasium
        return gymnasium.spaces.Dict(
            {k: s.to_gymnasium() for k, s in self.spaces.items()})

    def __repr__(self):
        return "Dict({})".format(
            ", ".join("{}: {}".format(k, s) for k, s in self.spaces.items()))
