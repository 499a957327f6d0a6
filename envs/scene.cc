#include "envs/scene.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rlvla3 {
namespace {

using G = SceneGeometry;

std::string Rgba(const std::array<float, 4>& c) {
  return absl::StrFormat("%.3g %.3g %.3g %.3g", c[0], c[1], c[2], c[3]);
}

// A flat round slab approximated by three boxes turned 60 degrees apart (a
// dodecagon): box-box contacts are stable, cylinder-box contacts in MuJoCo 2.2
// are not (thin cylinders get launched).
std::string FlatDisk(double radius, double half_height,
                     const std::array<float, 4>& rgba, double mass) {
  std::string s;
  const double half_width = radius * std::tan(M_PI / 6);
  for (int i = 0; i < 3; ++i) {
    absl::StrAppendFormat(
        &s,
        "      <geom class=\"object\" type=\"box\" size=\"%.4f %.4f %.4f\" "
        "pos=\"0 0 %.4f\" euler=\"0 0 %.4f\" rgba=\"%s\" mass=\"%.4f\"/>\n",
        radius, half_width, half_height, half_height, i * M_PI / 3, Rgba(rgba),
        mass / 3);
  }
  return s;
}

// A free body made of a flat bottom and `n` wall boxes around a circle.
std::string RoundContainer(const ObjectSpec& o, double radius, double height,
                           int n) {
  std::string s = absl::StrFormat(
      "    <body name=\"%s\" pos=\"0 0 0\">\n      <freejoint "
      "name=\"%s_joint\"/>\n"
      "%s",
      o.name, o.name, FlatDisk(radius + 0.01, 0.004, o.rgba, 0.15));
  const double wall_half_len = M_PI * (radius + 0.006) / n + 0.002;
  for (int i = 0; i < n; ++i) {
    const double a = 2 * M_PI * i / n;
    absl::StrAppendFormat(
        &s,
        "      <geom class=\"object\" type=\"box\" size=\"0.005 %.4f %.4f\" "
        "pos=\"%.4f %.4f %.4f\" euler=\"0 0 %.4f\" rgba=\"%s\" "
        "mass=\"0.01\"/>\n",
        wall_half_len, height / 2, (radius + 0.006) * std::cos(a),
        (radius + 0.006) * std::sin(a), height / 2 + 0.004, a, Rgba(o.rgba));
  }
  s += "    </body>\n";
  return s;
}

std::string CubeXml(const ObjectSpec& o) {
  return absl::StrFormat(
      "    <body name=\"%s\" pos=\"0 0 %.4f\">\n      <freejoint "
      "name=\"%s_joint\"/>\n"
      "      <geom class=\"object\" type=\"box\" size=\"%.4f %.4f %.4f\" "
      "rgba=\"%s\" "
      "mass=\"0.05\"/>\n    </body>\n",
      o.name, G::kCubeHalf, o.name, G::kCubeHalf, G::kCubeHalf, G::kCubeHalf,
      Rgba(o.rgba));
}

std::string PlateXml(const ObjectSpec& o) {
  return absl::StrFormat(
      "    <body name=\"%s\" pos=\"0 0 0\">\n      <freejoint "
      "name=\"%s_joint\"/>\n"
      "%s    </body>\n",
      o.name, o.name,
      FlatDisk(G::kPlateRadius, G::kPlateHeight / 2, o.rgba, 0.2));
}

// An open box: a bottom and four walls.
std::string BasketXml(const ObjectSpec& o) {
  const double h = G::kBasketHalf, t = 0.006, z = G::kBasketHeight / 2 + 0.005;
  std::string s = absl::StrFormat(
      "    <body name=\"%s\" pos=\"0 0 0\">\n      <freejoint "
      "name=\"%s_joint\"/>\n"
      "      <geom class=\"object\" type=\"box\" size=\"%.4f %.4f 0.005\" "
      "pos=\"0 0 0.005\" "
      "rgba=\"%s\" mass=\"0.2\"/>\n",
      o.name, o.name, h + t, h + t, Rgba(o.rgba));
  const double walls[4][4] = {{h + t / 2, 0, t / 2, h + t},
                              {-h - t / 2, 0, t / 2, h + t},
                              {0, h + t / 2, h + t, t / 2},
                              {0, -h - t / 2, h + t, t / 2}};
  for (const auto& w : walls) {
    absl::StrAppendFormat(
        &s,
        "      <geom class=\"object\" type=\"box\" size=\"%.4f %.4f %.4f\" "
        "pos=\"%.4f %.4f %.4f\" rgba=\"%s\" mass=\"0.03\"/>\n",
        w[2], w[3], G::kBasketHeight / 2, w[0], w[1], z, Rgba(o.rgba));
  }
  s += "    </body>\n";
  return s;
}

std::string DrawerXml(const ObjectSpec& o) {
  // Cabinet: a fixed box open towards -x, with a drawer sliding along -x.
  // The handle is a block on top of the drawer front, narrow in y so the
  // gripper (fingers closing along y) can grasp it from above.
  const double cx = G::kCabinetX, cy = G::kCabinetY;
  return absl::StrFormat(
      "    <body name=\"cabinet\" pos=\"%.4f %.4f 0\">\n"
      "      <geom class=\"object\" type=\"box\" size=\"0.1 0.1 0.005\" "
      "pos=\"0 0 0.005\" "
      "rgba=\"%s\"/>\n"
      "      <geom class=\"object\" type=\"box\" size=\"0.1 0.1 0.005\" "
      "pos=\"0 0 0.105\" "
      "rgba=\"%s\"/>\n"
      "      <geom class=\"object\" type=\"box\" size=\"0.1 0.005 0.05\" "
      "pos=\"0 0.105 0.055\" "
      "rgba=\"%s\"/>\n"
      "      <geom class=\"object\" type=\"box\" size=\"0.1 0.005 0.05\" "
      "pos=\"0 -0.105 0.055\" "
      "rgba=\"%s\"/>\n"
      "      <geom class=\"object\" type=\"box\" size=\"0.005 0.1 0.05\" "
      "pos=\"0.105 0 0.055\" "
      "rgba=\"%s\"/>\n"
      "      <body name=\"%s\" pos=\"0 0 0.012\">\n"
      "        <joint name=\"%s_slide\" type=\"slide\" axis=\"-1 0 0\" "
      "range=\"0 %.4f\" "
      "damping=\"2\" frictionloss=\"0.05\"/>\n"
      "        <geom class=\"object\" type=\"box\" size=\"0.095 0.095 "
      "0.004\" pos=\"0 0 0.004\" "
      "rgba=\"0.55 0.4 0.25 1\" mass=\"0.2\"/>\n"
      "        <geom class=\"object\" type=\"box\" size=\"0.004 0.095 "
      "0.04\" "
      "pos=\"-0.099 0 0.044\" rgba=\"0.55 0.4 0.25 1\" mass=\"0.05\"/>\n"
      "        <geom class=\"object\" type=\"box\" size=\"0.004 0.095 "
      "0.03\" pos=\"0.09 0 0.034\" "
      "rgba=\"0.55 0.4 0.25 1\" mass=\"0.05\"/>\n"
      "        <geom name=\"%s_handle\" class=\"object\" type=\"box\" "
      "size=\"0.02 0.012 0.02\" "
      "pos=\"-0.125 0 0.07\" rgba=\"0.8 0.8 0.8 1\" mass=\"0.02\"/>\n"
      "        <geom class=\"object\" type=\"box\" size=\"0.012 0.012 "
      "0.006\" "
      "pos=\"-0.108 0 0.074\" rgba=\"0.8 0.8 0.8 1\" mass=\"0.01\"/>\n"
      "        <site name=\"%s_handle_site\" pos=\"-0.125 0 0.07\" "
      "size=\"0.005\"/>\n"
      "      </body>\n    </body>\n",
      cx, cy, Rgba(o.rgba), Rgba(o.rgba), Rgba(o.rgba), Rgba(o.rgba),
      Rgba(o.rgba), o.name, o.name, G::kDrawerTravel, o.name, o.name);
}

std::string ObjectXml(const ObjectSpec& o) {
  switch (o.kind) {
    case ObjectKind::kCube:
      return CubeXml(o);
    case ObjectKind::kBowl:
      return RoundContainer(o, G::kBowlRadius, G::kBowlHeight, 16);
    case ObjectKind::kPlate:
      return PlateXml(o);
    case ObjectKind::kBasket:
      return BasketXml(o);
    case ObjectKind::kDrawer:
      return DrawerXml(o);
  }
  return "";
}

// Compiler and physics options, render buffer, lighting, materials and the
// default classes of arm, fingers and objects.
std::string HeaderXml(const SceneSpec& spec, int shadow) {
  return absl::StrFormat(R"(<mujoco model="rlvla3_tabletop">
  <compiler angle="radian" autolimits="true"/>
  <option timestep="0.002" cone="elliptic" impratio="10"/>
  <visual>
    <global offwidth="%d" offheight="%d"/>
    <quality shadowsize="%d" offsamples="0"/>
    <headlight ambient="0.25 0.25 0.25" diffuse="0.35 0.35 0.35" specular="0.05 0.05 0.05"/>
  </visual>
  <asset>
    <texture name="floor_tex" type="2d" builtin="checker" rgb1="0.3 0.32 0.35" rgb2="0.22 0.24 0.26" width="64" height="64"/>
    <material name="floor_mat" texture="floor_tex" texrepeat="8 8"/>
  </asset>
  <default>
    <default class="arm">
      <geom contype="2" conaffinity="0" rgba="0.92 0.92 0.95 1" density="300"/>
      <joint damping="20" armature="0.05"/>
      <position kp="300" forcerange="-80 80"/>
    </default>
    <default class="finger">
      <geom contype="2" conaffinity="0" friction="2 0.05 0.001" condim="4" rgba="0.25 0.25 0.28 1" solref="0.005 1"/>
      <joint damping="5" armature="0.01"/>
    </default>
    <default class="object">
      <geom contype="1" conaffinity="3" friction="1.2 0.01 0.001" condim="4" solref="0.005 1"/>
    </default>
  </default>
)",
                         spec.image_width, spec.image_height, shadow);
}

// The light, floor, table, the agentview camera (front, above) and the
// sideview camera (the table from the arm's right).
std::string TableXml(const SceneSpec& spec) {
  return absl::StrFormat(
      R"(    <light pos="0.3 -0.3 2.5" dir="-0.1 0.1 -1" directional="true" diffuse="0.45 0.45 0.45" castshadow="%s"/>
    <geom name="floor" type="plane" pos="0 0 -0.75" size="3 3 0.1" material="floor_mat" contype="1" conaffinity="1"/>
    <body name="table" pos="0 0 0">
      <geom name="table_top" type="box" pos="-0.1 0 -0.025" size="0.6 0.5 0.025" rgba="0.55 0.45 0.34 1" contype="1" conaffinity="1" friction="1 0.01 0.001"/>
      <geom type="box" pos="-0.1 0 -0.4" size="0.05 0.05 0.35" rgba="0.4 0.3 0.2 1" contype="0" conaffinity="0"/>
    </body>
    <camera name="agentview" pos="0.62 0 0.62" xyaxes="0 1 0 -0.59 0 0.8" fovy="50"/>
    <camera name="sideview" pos="-0.1 -0.85 0.45" xyaxes="1 0 0 0 0.43 0.9" fovy="55"/>
)",
      spec.shadow_size > 0 ? "true" : "false");
}

// Arm: a 7-DoF chain (yaw, pitch, roll, pitch, roll, pitch, roll) of
// capsules with position servos; gravity is compensated by the controller.
std::string ArmXml() {
  return absl::StrFormat(
      R"(    <body name="base" pos="%.3f 0 0" childclass="arm">
      <geom type="cylinder" size="0.07 0.05" pos="0 0 0.05"/>
      <body name="link1" pos="0 0 0.1">
        <joint name="j1" axis="0 0 1" range="-2.8 2.8"/>
        <geom type="capsule" fromto="0 0 0 0 0 0.2" size="0.055"/>
        <body name="link2" pos="0 0 0.2">
          <joint name="j2" axis="0 1 0" range="-1.8 1.8"/>
          <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.05"/>
          <body name="link3" pos="0 0 0.3">
            <joint name="j3" axis="0 0 1" range="-2.8 2.8"/>
            <geom type="capsule" fromto="0 0 0 0 0 0.12" size="0.045"/>
            <body name="link4" pos="0 0 0.12">
              <joint name="j4" axis="0 1 0" range="-0.1 2.9"/>
              <geom type="capsule" fromto="0 0 0 0 0 0.3" size="0.04"/>
              <body name="link5" pos="0 0 0.3">
                <joint name="j5" axis="0 0 1" range="-2.8 2.8"/>
                <geom type="capsule" fromto="0 0 0 0 0 0.06" size="0.035"/>
                <body name="link6" pos="0 0 0.06">
                  <joint name="j6" axis="0 1 0" range="-0.5 3.6"/>
                  <geom type="capsule" fromto="0 0 0 0 0 0.06" size="0.035"/>
                  <body name="link7" pos="0 0 0.06">
                    <joint name="j7" axis="0 0 1" range="-2.8 2.8"/>
                    <geom type="cylinder" size="0.035 0.01" pos="0 0 0.01"/>
                    <body name="hand" pos="0 0 0.02">
                      <geom type="box" size="0.025 0.07 0.025" pos="0 0 0.025" rgba="0.25 0.25 0.28 1"/>
                      <camera name="wrist" pos="-0.07 0 0.03" xyaxes="0 -1 0 -0.914 0 0.406" fovy="75"/>
                      <site name="eef" pos="0 0 0.115" size="0.006" rgba="0 0 0 0"/>
                      <body name="left_finger" pos="0 0 0.05">
                        <joint name="finger_left" class="finger" type="slide" axis="0 1 0" range="0 0.045"/>
                        <geom class="finger" type="box" size="0.012 0.006 0.045" pos="0 0.008 0.045"/>
                      </body>
                      <body name="right_finger" pos="0 0 0.05">
                        <joint name="finger_right" class="finger" type="slide" axis="0 -1 0" range="0 0.045"/>
                        <geom class="finger" type="box" size="0.012 0.006 0.045" pos="0 -0.008 0.045"/>
                      </body>
                    </body>
                  </body>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
)",
      G::kRobotBaseX);
}

std::string ActuatorXml() {
  return R"(  <actuator>
    <position name="a1" class="arm" joint="j1"/>
    <position name="a2" class="arm" joint="j2"/>
    <position name="a3" class="arm" joint="j3"/>
    <position name="a4" class="arm" joint="j4"/>
    <position name="a5" class="arm" joint="j5" kp="150"/>
    <position name="a6" class="arm" joint="j6" kp="150"/>
    <position name="a7" class="arm" joint="j7" kp="100"/>
    <position name="grip_left" joint="finger_left" kp="400" forcerange="-25 25" ctrlrange="-0.02 0.045"/>
    <position name="grip_right" joint="finger_right" kp="400" forcerange="-25 25" ctrlrange="-0.02 0.045"/>
  </actuator>
)";
}

}  // namespace

ObjectSpec ObjectSpec::Cube(const std::string& colour) {
  ObjectSpec o;
  o.kind = ObjectKind::kCube;
  o.name = colour + "_cube";
  if (colour == "red") o.rgba = {0.85f, 0.15f, 0.15f, 1};
  if (colour == "green") o.rgba = {0.15f, 0.7f, 0.2f, 1};
  if (colour == "blue") o.rgba = {0.15f, 0.3f, 0.85f, 1};
  if (colour == "yellow") o.rgba = {0.9f, 0.8f, 0.1f, 1};
  return o;
}
ObjectSpec ObjectSpec::Bowl() {
  return {ObjectKind::kBowl, "bowl", {0.95f, 0.95f, 0.9f, 1}};
}
ObjectSpec ObjectSpec::Plate() {
  return {ObjectKind::kPlate, "plate", {0.9f, 0.5f, 0.6f, 1}};
}
ObjectSpec ObjectSpec::Basket() {
  return {ObjectKind::kBasket, "basket", {0.6f, 0.45f, 0.25f, 1}};
}
ObjectSpec ObjectSpec::Drawer() {
  return {ObjectKind::kDrawer, "drawer", {0.45f, 0.3f, 0.2f, 1}};
}

std::string BuildSceneXml(const SceneSpec& spec) {
  std::string objects;
  for (const auto& o : spec.objects) objects += ObjectXml(o);
  objects += spec.extra_worldbody;
  const int shadow = spec.shadow_size > 0 ? spec.shadow_size : 1;
  return absl::StrCat(HeaderXml(spec, shadow), "  <worldbody>\n",
                      TableXml(spec), ArmXml(), objects, "  </worldbody>\n",
                      ActuatorXml(), "</mujoco>\n");
}

}  // namespace rlvla3
