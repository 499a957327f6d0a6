// rl-vla3: the single executable; the verbs are in services/verbs/ (cli.cc).
#include <string>
#include <vector>

#include "services/verbs/cli.h"

int main(int argc, char** argv) {
  return rlvla3::RunCli(std::vector<std::string>(argv + 1, argv + argc));
}
