"""Generated gRPC stubs of rl-vla3's protos (scripts/gen_python_stubs.sh)."""
