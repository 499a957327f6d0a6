"""grpc.health.v1 stubs under their own name, so they never shadow grpc (generated)."""
