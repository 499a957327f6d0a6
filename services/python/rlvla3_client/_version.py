# The project's version (CMakeLists.txt project(VERSION)); a test keeps them equal.
__version__ = "0.3.0"
