// File: services/config_bridge.h
// -----------------------------------------------------------------------------
// Turns the typed run config into the option structs of the libraries it
// configures, in one place, so every verb builds them the same way.
//
// Example:
//   EnvOptions env = EnvOptionsFromConfig(config);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_CONFIG_BRIDGE_H_
#define RLVLA3_SERVICES_CONFIG_BRIDGE_H_

#include "envs/manipulation_env.h"
#include "runtime/config.h"

namespace rlvla3 {

// env.* keys -> EnvOptions (rendering on).
inline EnvOptions EnvOptionsFromConfig(const Config& c) {
  EnvOptions o;
  o.image_width = static_cast<int>(c.env.image_width);
  o.image_height = static_cast<int>(c.env.image_height);
  o.shaped_reward = c.env.shaped_reward;
  return o;
}

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_CONFIG_BRIDGE_H_
