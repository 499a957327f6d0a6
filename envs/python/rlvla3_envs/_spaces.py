"""Gymnasium-shaped space descriptions, without needing Gymnasium: Box and
Dict with shape, dtype, bounds, contains(), seed() and sample(), sampling as
gymnasium.spaces does. VecEnv.gymnasium_spaces() gives gymnasium.spaces
objects where Gymnasium is installed."""

import numpy as np


class _Seeded:
    """A space's own numpy Generator: made on first use, or by seed()."""

    _np_random = None

    @property
    def np_random(self):
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    def _rng(self, rng):
        return self.np_random if rng is None else rng


class Box(_Seeded):
    def __init__(self, low, high, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.low = np.full(self.shape, low, dtype=self.dtype)
        self.high = np.full(self.shape, high, dtype=self.dtype)

    def contains(self, x):
        x = np.asarray(x)
        return (x.shape == self.shape and x.dtype == self.dtype
                and bool(np.all(x >= self.low)) and bool(np.all(x <= self.high)))

    def seed(self, seed=None):
        """Seeds sample()'s generator (None: fresh entropy); returns seed."""
        self._np_random = np.random.default_rng(seed)
        return seed

    def sample(self, rng=None):
        """One value inside the box, from `rng` (default: the space's own,
        see seed()). Float dims as Gymnasium: uniform on [low, high],
        low + exponential on [low, inf), high - exponential on (-inf, high],
        standard normal on (-inf, inf)."""
        rng = self._rng(rng)
        if np.issubdtype(self.dtype, np.integer):
            return rng.integers(self.low, self.high, endpoint=True,
                                dtype=self.dtype)
        return _sample_float(rng, self.low, self.high).astype(self.dtype)

    def to_gymnasium(self):
        import gymnasium
        return gymnasium.spaces.Box(self.low, self.high, self.shape, self.dtype)

    def __repr__(self):
        return "Box({}, {}, {}, {})".format(
            self.low.flat[0] if self.low.size else None,
            self.high.flat[0] if self.high.size else None, self.shape,
            self.dtype)


def _sample_float(rng, low, high):
    below, above = np.isfinite(low), np.isfinite(high)
    out = np.empty(low.shape)
    both, neither = below & above, ~below & ~above
    only_low, only_high = below & ~above, ~below & above
    out[both] = rng.uniform(low[both], high[both])
    out[neither] = rng.normal(size=int(neither.sum()))
    out[only_low] = low[only_low] + rng.exponential(size=int(only_low.sum()))
    out[only_high] = high[only_high] - rng.exponential(size=int(only_high.sum()))
    return out


class Dict(_Seeded):
    def __init__(self, spaces):
        self.spaces = dict(spaces)

    def __getitem__(self, key):
        return self.spaces[key]

    def keys(self):
        return self.spaces.keys()

    def contains(self, x):
        return (isinstance(x, dict) and set(x) == set(self.spaces)
                and all(s.contains(x[k]) for k, s in self.spaces.items()))

    def seed(self, seed=None):
        """Seeds this space and, from it, each subspace (as Gymnasium's
        Dict.seed with an int); returns {key: the subspace's seed}."""
        self._np_random = np.random.default_rng(seed)
        if seed is None:
            return {k: s.seed(None) for k, s in self.spaces.items()}
        subseeds = self._np_random.integers(np.iinfo(np.int32).max,
                                            size=len(self.spaces))
        return {k: s.seed(int(sub))
                for (k, s), sub in zip(self.spaces.items(), subseeds)}

    def sample(self, rng=None):
        """One value per subspace: from `rng` where given, else each
        subspace's own generator (see seed())."""
        return {k: s.sample(rng) for k, s in self.spaces.items()}

    def to_gymnasium(self):
        import gymnasium
        return gymnasium.spaces.Dict(
            {k: s.to_gymnasium() for k, s in self.spaces.items()})

    def __repr__(self):
        return "Dict({})".format(
            ", ".join("{}: {}".format(k, s) for k, s in self.spaces.items()))
