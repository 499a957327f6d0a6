// File: envs/scene.h
// -----------------------------------------------------------------------------
// Generates the MJCF of a tabletop manipulation scene: a table, a 7-DoF arm
// with a two-finger parallel gripper, and the objects a task needs (cubes of
// several colours, a bowl, a plate, a basket, a cabinet with a sliding drawer),
// plus an `agentview`, a `sideview` and a `wrist` camera. Arm links are
// filtered from colliding with each other and with the table so the scene is
// stable.
//
// Example:
//   SceneSpec spec;
//   spec.objects = {ObjectKind::kCube("red"), ObjectSpec::Plate()};
//   spec.image_width = spec.image_height = 128;
//   std::string xml = BuildSceneXml(spec);
//   absl::StatusOr<MjModelPtr> m = LoadModelFromString(xml, "scene.xml");
// -----------------------------------------------------------------------------
#ifndef RLVLA3_ENVS_SCENE_H_
#define RLVLA3_ENVS_SCENE_H_

#include <array>
#include <string>
#include <vector>

namespace rlvla3 {

enum class ObjectKind { kCube, kBowl, kPlate, kBasket, kDrawer };

// One object of a scene. Names are unique within a scene; body names equal
// them.
struct ObjectSpec {
  ObjectKind kind = ObjectKind::kCube;
  std::string name;  // e.g. "red_cube", "bowl", "drawer"
  std::array<float, 4> rgba = {1, 1, 1, 1};

  static ObjectSpec Cube(
      const std::string& colour);  // "red", "green", "blue", "yellow"
  static ObjectSpec Bowl();
  static ObjectSpec Plate();
  static ObjectSpec Basket();
  static ObjectSpec Drawer();  // a fixed cabinet with a drawer on a slide joint
};

// Geometry constants shared by scene generation, predicates and experts (m).
struct SceneGeometry {
  static constexpr double kCubeHalf = 0.02;
  static constexpr double kBowlRadius = 0.07;  // inner radius of the rim
  static constexpr double kBowlHeight = 0.045;
  static constexpr double kPlateRadius = 0.08;
  static constexpr double kPlateHeight = 0.01;
  static constexpr double kBasketHalf = 0.075;  // inner half-width
  static constexpr double kBasketHeight = 0.07;
  static constexpr double kDrawerTravel = 0.16;  // slide range of the drawer
  static constexpr double kCabinetX = 0.22;      // cabinet centre (fixed)
  static constexpr double kCabinetY = 0.18;
  static constexpr double kRobotBaseX = -0.55;  // arm base on the table edge
  static constexpr double kFingerOpen = 0.04;   // finger slide when open
};

struct SceneSpec {
  std::vector<ObjectSpec> objects;
  int image_width = 128;  // offscreen buffer size for rendering
  int image_height = 128;
  // Shadow map size; 0 turns shadows off (fast on llvmpipe).
  int shadow_size = 0;
  std::string extra_worldbody;  // MJCF elements appended inside <worldbody>
};

// The MJCF text of the scene.
std::string BuildSceneXml(const SceneSpec& spec);

// Names of the arm joints in chain order, the finger joints, and sites.
inline constexpr int kArmJoints = 7;
inline constexpr const char* kEefSite = "eef";

}  // namespace rlvla3

#endif  // RLVLA3_ENVS_SCENE_H_
