// File: services/verbs/verbs.h
// -----------------------------------------------------------------------------
// Every verb of `rl-vla3`, one per file in this folder; cli.cc lists them in
// its table (the order of `rl-vla3 help`).
//
// Example:
//   const Verb train = TrainVerb();
//   std::printf("%s", train.help);
// -----------------------------------------------------------------------------
#ifndef RLVLA3_SERVICES_VERBS_VERBS_H_
#define RLVLA3_SERVICES_VERBS_VERBS_H_

#include "services/verbs/verb.h"

namespace rlvla3 {

Verb ConfigVerb();        // config_verb.cc
Verb SelfCheckVerb();     // selfcheck_verb.cc
Verb RenderVerb();        // render_verbs.cc
Verb RolloutVideoVerb();  // render_verbs.cc
Verb ExpertEvalVerb();    // expert_eval_verb.cc
Verb DemosVerb();         // demos_verb.cc
Verb SftVerb();           // sft_verb.cc
Verb EvalVerb();          // eval_verb.cc
Verb TrainVerb();         // train_verb.cc
Verb BenchVerb();         // bench_verb.cc
Verb ServeVerb();         // serve_verb.cc
Verb UpVerb();            // up_verbs.cc: up --local
Verb DownVerb();          // up_verbs.cc: down --local
Verb StatusVerb();        // up_verbs.cc
Verb PlanVerb();          // plan_verb.cc

}  // namespace rlvla3

#endif  // RLVLA3_SERVICES_VERBS_VERBS_H_
