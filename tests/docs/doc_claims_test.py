"""scripts/doc_claims.py catches each kind of untrue doc (issue 61, section
3), on small pages written here: a figure the log does not hold, a figure
credited to a page that does not show it, "not measured" beside a page that
measured it, a config comment that disagrees with the config, an example
command that fails. Each case also has its true twin, which passes.

  RLVLA3_BINARY=build/services/rl-vla3 /usr/bin/python3 -m unittest \
      tests/docs/doc_claims_test.py
"""
import os
import shutil
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import doc_claims  # noqa: E402

BINARY = os.environ.get("RLVLA3_BINARY", os.path.join(ROOT, "build/services/rl-vla3"))


class Collect:
    def __init__(self):
        self.errors = []
        self.counts = {"figures": 0, "comments": 0}

    def bad(self, where, what):
        self.errors.append("%s:%d: %s" % (where[0], where[1], what))


class DocClaims(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="doc_claims_test_")
        os.makedirs(os.path.join(self.root, "docs"))
        os.makedirs(os.path.join(self.root, "configs"))
        self.write("docs/experiments.md",
                   "| bench_cpu | 1.91x | 2.09x |\n| sft lift | 70.0% |\n")
        self.write("docs/benchmarks.md", "async over sync: 1.91x\n")

    def tearDown(self):
        shutil.rmtree(self.root)

    def write(self, rel, text):
        with open(os.path.join(self.root, rel), "w") as f:
            f.write(text)
        return os.path.join(self.root, rel)

    def check(self, fn, *pages, **kw):
        c = Collect()
        fn(c, list(pages), self.root, "docs/experiments.md", **kw)
        return c.errors

    def test_a_figure_the_log_does_not_hold(self):
        bad = self.write("docs/a.md", "bench_cpu runs 1.78x faster async.\n")
        good = self.write("docs/b.md", "bench_cpu runs 1.91x faster async.\n")
        errors = self.check(doc_claims.figures, bad, good)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("docs/a.md:1: figure `1.78x`", errors[0])

    def test_a_figure_credited_to_a_page_that_does_not_show_it(self):
        # 2.09x is in the log, but the page it credits does not show it.
        bad = self.write("docs/a.md", "2.09x ([benchmarks](benchmarks.md))\n")
        good = self.write("docs/b.md", "1.91x ([benchmarks](benchmarks.md))\n")
        both = self.write("docs/c.md", "2.09x ([benchmarks](benchmarks.md), "
                          "[log](experiments.md))\n")
        errors = self.check(doc_claims.citations, bad, good, both)
        self.assertEqual(len(errors), 1, errors)
        self.assertIn("docs/a.md:1: figure `2.09x` is credited to "
                      "docs/benchmarks.md, which does not hold it", errors[0])

    def test_not_measured_beside_a_page_that_measured_it(self):
        measured = self.write("docs/training.md",
                              "| `put_red_cube_in_basket` SFT | 21.8% |\n")
        says = self.write("docs/tasks.md", "| basket | SFT alone on "
                          "`put_red_cube_in_basket`: not measured |\n")
        other = self.write("docs/other.md", "| plates | 0% | The other "
                           "three: not measured |\n")
        c = Collect()
        doc_claims.absences(c, [measured, says, other], self.root,
                            ["put_red_cube_in_basket", "put_red_cube_on_plate"])
        self.assertEqual(len(c.errors), 1, c.errors)
        self.assertIn("docs/tasks.md:1: says `put_red_cube_in_basket` is not "
                      "measured, but docs/training.md:1", c.errors[0])

    @unittest.skipUnless(os.access(BINARY, os.X_OK), "no rl-vla3 binary")
    def test_a_config_comment_that_disagrees_with_the_config(self):
        self.write("configs/x.yaml",
                   "rl:\n"
                   "  # 4 groups: rollouts_per_step 4 x num_envs 8\n"
                   "  rollouts_per_step: 8\n"
                   "  # or `--set rl.rollouts_per_step=2` for a quick run\n"
                   "  # grpo_group_size (8) episodes a group\n"
                   "  grpo_group_size: 8\n")
        c = Collect()
        doc_claims.comments(c, self.root, BINARY)
        self.assertEqual(len(c.errors), 1, c.errors)
        self.assertIn("configs/x.yaml:2: the comment says rollouts_per_step 4; "
                      "the file gives rl.rollouts_per_step = 8", c.errors[0])
        self.assertEqual(c.counts["comments"], 2)

    @unittest.skipUnless(os.access(BINARY, os.X_OK), "no rl-vla3 binary")
    def test_an_example_command_that_fails(self):
        ex = doc_claims.Examples(ROOT, BINARY)
        try:
            c = Collect()
            ex.run(c, ("docs/a.md", 3), ["config", "--set", "env.num_envs=4"])
            ex.run(c, ("docs/a.md", 4), ["config", "--set", "env.num_envs=-4"])
            ex.run(c, ("docs/a.md", 5), ["sft", "--config", "configs/sft_demo.yaml"])
            self.assertEqual(ex.ran, 2)  # sft is not cheap: not run
            self.assertEqual(len(c.errors), 1, c.errors)
            self.assertIn("docs/a.md:4: `rl-vla3 config --set env.num_envs=-4` "
                          "exits 2", c.errors[0])
        finally:
            ex.close()


if __name__ == "__main__":
    unittest.main()
