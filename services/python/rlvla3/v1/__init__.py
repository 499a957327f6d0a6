"""rlvla3.v1: tensor, rollout and services messages and stubs (generated)."""
