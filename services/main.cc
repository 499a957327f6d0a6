// rl-vla3: the single executable; every verb lives in the services library.
#include <string>
#include <vector>

#include "services/cli.h"

int main(int argc, char** argv) {
  return rlvla3::RunCli(std::vector<std::string>(argv + 1, argv + argc));
}
