// The math verifier's case table: each row is a reference, a completion, the
// expected reward (format_reward 0) and a fragment of the expected reason.
// Rows cover every construct of the grammar, both directions (equivalent
// spellings that must match, near misses that must not), the traps of
// string-matching verifiers, and the work budget. Rows marked "MV:" differ
// from what Hugging Face Math-Verify's tests (tests/test_all.py) expect for
// the same pair; docs/math-verifier.md gives the reasons.
#include "common/tasks/math_verifier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/tasks/verifier.h"

namespace rlvr {
namespace {

struct MathCase {
  const char* construct;   // what the row is about
  const char* answer;      // the reference
  const char* completion;  // the model's text
  double reward;           // with format_reward 0
  const char* reason;      // a fragment of the verdict's reason
};

// clang-format off
const std::vector<MathCase>& Cases() {
  static const auto* cases = new std::vector<MathCase>{
  // ---- the issue's own examples
  {"issue", R"(\frac{\sqrt3}{2})", R"(\boxed{\frac{\sqrt{3}}{2}})", 1, "correct"},
  {"issue", R"(\frac{\sqrt{3}}{2})", R"(\boxed{\frac{\sqrt3}{2}})", 1, "correct"},
  {"issue", R"(\{1,2\})", R"(\boxed{{2, 1}})", 1, "equal as sets"},
  {"issue", R"({2, 1})", R"(\boxed{\{1,2\}})", 1, "equal as sets"},
  {"issue", R"(50\%)", R"(\boxed{0.5})", 1, "exact"},
  {"issue", R"(0.5)", R"(\boxed{50\%})", 1, "exact"},
  {"issue", "x^2", R"(\boxed{2x})", 0, "differ at x="},
  {"issue", "2x", R"(\boxed{x^2})", 0, "differ at x="},
  {"issue", "(1,2)", R"(\boxed{[1,2]})", 0, "open and closed ends differ"},
  {"issue", "[1,2]", R"(\boxed{(1,2)})", 0, "open and closed ends differ"},
  {"issue", "1/2", R"(\boxed{2})", 0, "exact values differ"},
  {"issue", "2", R"(\boxed{1/2})", 0, "exact values differ"},
  {"issue", R"(\sqrt{2})", R"(\boxed{2})", 0, "differ numerically"},
  {"issue", "2", R"(\boxed{\sqrt{2}})", 0, "differ numerically"},
  {"issue", "1/3", R"(\boxed{0.333})", 0, "not within relative tolerance"},
  {"issue", "0.333", R"(\boxed{1/3})", 0, "not within relative tolerance"},
  {"issue", "x = 3", R"(\boxed{3})", 1, "exact"},
  {"issue", "3", R"(\boxed{x = 3})", 1, "exact"},
  {"issue", "y = 2x + 1", R"(\boxed{y = 1 + 2x})", 1, "sample points"},
  {"issue", "y = 2x + 1", R"(\boxed{2x+1})", 1, "sample points"},
  {"issue", "3, 5", R"(\boxed{3 \text{ and } 5})", 1, "equal as sets"},
  {"issue", R"(3 \text{ and } 5)", R"(\boxed{5, 3})", 1, "equal as sets"},
  {"issue", "3, 5", R"(\boxed{3, 6})", 0, "is not in the reference"},

  // ---- integers
  {"integer", "42", R"(\boxed{42})", 1, "exact"},
  {"integer", "42", R"(\boxed{042})", 1, "exact"},
  {"integer", "42", R"(\boxed{+42})", 1, "exact"},
  {"integer", "-5", R"(\boxed{-5})", 1, "exact"},
  {"integer", "-5", R"(\boxed{5})", 0, "exact values differ"},
  {"integer", "0", R"(\boxed{-0})", 1, "exact"},
  {"integer", "123456789012345678901234567890", R"(\boxed{123456789012345678901234567890})", 1, "exact"},
  {"integer", "123456789012345678901234567890", R"(\boxed{123456789012345678901234567891})", 0, "exact values differ"},
  {"integer", "100", R"(\boxed{99})", 0, "exact values differ"},

  // ---- decimals
  {"decimal", "0.5", R"(\boxed{.5})", 1, "exact"},
  {"decimal", "0.5", R"(\boxed{0.50})", 1, "exact"},
  {"decimal", "2.5", R"(\boxed{2.50000001})", 0, "exact values differ"},
  {"decimal", "1234567.8", R"(\boxed{1234567.9})", 0, "exact values differ"},
  {"decimal", "1000", R"(\boxed{1000.0})", 1, "exact"},
  {"decimal", "16386.17", R"(\boxed{16386.169})", 0, "exact values differ"},
  {"decimal", "0.1", R"(\boxed{\frac{1}{10}})", 1, "exact"},
  {"decimal", "1/8", R"(\boxed{0.125})", 1, "exact"},
  {"decimal", "1/3", R"(\boxed{0.\overline{3}})", 1, "exact"},
  {"decimal", "1/6", R"(\boxed{0.1\overline{6}})", 1, "exact"},

  // ---- scientific notation
  {"scientific", "1500", R"(\boxed{1.5 \times 10^{3}})", 1, "exact"},
  {"scientific", "1500", R"(\boxed{1.5e3})", 1, "exact"},
  {"scientific", "0.0002", R"(\boxed{2E-4})", 1, "exact"},
  {"scientific", R"(3 \cdot 10^8)", R"(\boxed{3\times10^{8}})", 1, "exact"},
  {"scientific", R"(3 \cdot 10^8)", R"(\boxed{3\times10^{9}})", 0, "exact values differ"},
  {"scientific", "6.02e23", R"(\boxed{6.02 \cdot 10^{23}})", 1, "exact"},

  // ---- thousands separators
  {"thousands", "1000", R"(\boxed{1,000})", 1, "exact"},
  {"thousands", "7425000", R"(\boxed{7,425,000})", 1, "exact"},
  {"thousands", "14916", R"(\boxed{14{,}916})", 1, "exact"},
  {"thousands", "11111111100", R"(\boxed{11,\! 111,\! 111,\! 100})", 1, "exact"},
  {"thousands", "1000", R"(\boxed{1\,000})", 1, "exact"},
  {"thousands", "12", R"(\boxed{1,2})", 0, "not in the reference"},
  {"thousands", "32349", R"(\boxed{32, 349})", 0, "not in the reference"},
  {"thousands", "1000.99", R"(\boxed{1,000.99})", 1, "exact"},
  {"thousands", "12000023", "Final Answer: The final answer is 12,000,023. I hope it is correct.", 1, "exact"},

  // ---- fractions
  {"fraction", R"(\frac{1}{2})", R"(\boxed{\dfrac{1}{2}})", 1, "exact"},
  {"fraction", R"(\frac{1}{2})", R"(\boxed{\tfrac12})", 1, "exact"},
  {"fraction", R"(\frac{1}{2})", R"(\boxed{\frac12})", 1, "exact"},
  {"fraction", R"(\frac{1}{2})", R"(\boxed{\cfrac{1}{2}})", 1, "exact"},
  {"fraction", R"(\frac{1}{2})", R"(\boxed{\frac{2}{4}})", 1, "exact"},
  {"fraction", R"(\frac{1}{2})", R"(\boxed{1/2})", 1, "exact"},
  {"fraction", R"(\frac{1}{2})", R"(\boxed{\frac{1}{3}})", 0, "exact values differ"},
  {"fraction", "10/9", R"(\boxed{\frac{10}{9}})", 1, "exact"},
  {"fraction", "-10/9", R"(\boxed{-\frac{10}{9}})", 1, "exact"},
  {"fraction", R"(-\frac{1}{2})", R"(\boxed{\frac{-1}{2}})", 1, "exact"},
  {"fraction", R"(-\frac{1}{2})", R"(\boxed{\frac{1}{-2}})", 1, "exact"},
  {"fraction", R"(-\frac{1}{2})", R"(\boxed{0.5})", 0, "not within relative tolerance"},
  {"fraction", "1", R"(\boxed{\frac3{3}})", 1, "exact"},
  {"fraction", R"(\frac{14}{3})", R"(\boxed{4\frac{2}{3}})", 1, "exact"},
  {"fraction", "40/9", "The answer is 4 4/9.", 1, "exact"},
  {"fraction", "4", "The answer is 4 4/9.", 0, "exact values differ"},
  {"fraction", R"(\frac{333333333333333333333}{999999999999999999999})", R"(\boxed{\frac{1}{3}})", 1, "exact"},
  {"fraction", R"(\frac{3}{56})", R"(so \[p(8) = \frac{q(8) + 8}{8^2 - 1} = \boxed{\frac{3}{56}}.\])", 1, "exact"},

  // ---- roots
  {"root", R"(\sqrt{12})", R"(\boxed{2\sqrt{3}})", 1, "numerically"},
  {"root", R"(3\sqrt{13})", R"(\boxed{\sqrt{117}})", 1, "numerically"},
  {"root", R"(\sqrt[3]{8})", R"(\boxed{2})", 1, "exact"},
  {"root", R"(\sqrt[3]{-8})", R"(\boxed{-2})", 1, "exact"},
  {"root", R"(\sqrt[4]{16})", R"(\boxed{2})", 1, "exact"},
  {"root", R"(\sqrt[3]{2})", R"(\boxed{2^{1/3}})", 1, "numerically"},
  {"root", R"(\sqrt{2})", R"(\boxed{\sqrt 2})", 1, "numerically"},
  {"root", R"(\sqrt{2}+\sqrt{5})", R"(The answer is $\boxed{\sqrt 2+\sqrt 5}$)", 1, "numerically"},
  {"root", R"(\frac{\sqrt{\sqrt{11}+\sqrt{194}}}{15+2\sqrt{33}})", R"(\boxed{\frac{\sqrt{\sqrt{11}+\sqrt{194}}}{2\sqrt{33}+15}})", 1, "numerically"},
  {"root", "4", R"(\boxed{4\sqrt{2}})", 0, "differ numerically"},
  {"root", R"(1\sqrt{19})", R"(\boxed{1})", 0, "differ numerically"},
  {"root", "2", R"(\boxed{\frac{1+\sqrt{5}}{2}})", 0, "differ numerically"},
  {"root", R"(\frac{5\sqrt{42}}{27})", R"(\boxed{\frac{10\sqrt{10.5}}{27}})", 1, "tolerance"},
  {"root", R"(\sqrt{-4})", R"(\boxed{2i})", 1, "exact"},

  // ---- powers
  {"power", "1024", R"(\boxed{2^{10}})", 1, "exact"},
  {"power", "1024", R"(\boxed{2^10})", 1, "exact"},
  {"power", "2", R"(\boxed{2^{10}})", 0, "exact values differ"},
  {"power", "-4", R"(\boxed{-2^2})", 1, "exact"},
  {"power", "4", R"(\boxed{(-2)^2})", 1, "exact"},
  {"power", R"(\frac{1}{8})", R"(\boxed{2^{-3}})", 1, "exact"},
  {"power", "512", R"(\boxed{2^{3^2}})", 1, "exact"},
  {"power", "9", R"(\boxed{27^{2/3}})", 1, "exact"},
  {"power", "x^6", R"(\boxed{(x^2)^3})", 1, "sample points"},
  {"power", "8", R"(\boxed{2**3})", 1, "exact"},

  // ---- pi, e, i
  {"constant", R"(\pi)", R"(\boxed{\pi})", 1, "numerically"},
  {"constant", R"(\frac{9}{4}\pi)", R"(Therefore $\boxed{\frac94\pi}$.)", 1, "numerically"},
  {"constant", R"(2\pi)", R"(\boxed{6.2831853})", 1, "tolerance"},
  {"constant", R"(\pi)", R"(\boxed{3.14})", 0, "differ numerically"},
  {"constant", R"(\pi)", R"(\boxed{\frac{22}{7}})", 0, "differ numerically"},
  {"constant", "e", R"(\boxed{2.7182818})", 1, "tolerance"},
  {"constant", "e^2", R"(\boxed{e \cdot e})", 1, "numerically"},
  {"constant", "-1", R"(\boxed{e^{i\pi}})", 1, "numerically"},
  {"constant", "-1", R"(\boxed{i^2})", 1, "exact"},
  {"constant", "3+4i", R"(\boxed{4i+3})", 1, "exact"},
  {"constant", "3+4i", R"(\boxed{3-4i})", 0, "exact values differ"},
  {"constant", R"(\frac{1-i}{2})", R"(\boxed{\frac{1}{1+i}})", 1, "exact"},

  // ---- implicit multiplication
  {"implicit", "2x", R"(\boxed{2 \cdot x})", 1, "sample points"},
  {"implicit", "xy", R"(\boxed{yx})", 1, "sample points"},
  {"implicit", "6", R"(\boxed{2(3)})", 1, "exact"},
  {"implicit", "x^2 - 1", R"(\boxed{(x+1)(x-1)})", 1, "sample points"},
  {"implicit", "x^2 + 1", R"(\boxed{(x+1)(x-1)})", 0, "differ at"},
  {"implicit", R"(3\sqrt{2})", R"(\boxed{\sqrt{18}})", 1, "numerically"},
  {"implicit", R"(2 \sin b \cos a)", R"(\[\sin (a + b) - \sin (a - b) = \boxed{2 \sin b \cos a}.\])", 1, "sample points"},
  {"implicit", R"(\frac{\pi r}{h+r})", R"(The answer is $\boxed{\frac{\pi r}{h+r}}$.)", 1, "sample points"},
  {"implicit", "x+2n+1", R"(\boxed{x+1})", 0, "differ at"},
  {"implicit", "(a+5)(b+2)", R"(\boxed{(+5)(b+2)})", 0, "differ at"},

  // ---- unary minus and plus-minus
  {"minus", "-3", R"(\boxed{-(3)})", 1, "exact"},
  {"minus", "3", R"(\boxed{--3})", 1, "exact"},
  {"minus", "2-2p", R"(Thus $x-p=\boxed{2-2p}$.)", 1, "sample points"},
  {"minus", "2-2p", R"(\boxed{-2p+2})", 1, "sample points"},
  {"minus", "2-2p", R"(\boxed{2p-2})", 0, "differ at"},
  {"pm", R"(1 \pm \sqrt{19})", R"(\boxed{1 \pm \sqrt{19}})", 1, "equal as sets"},
  {"pm", R"(1 \pm \sqrt{19})", R"(\boxed{1+\sqrt{19}, 1-\sqrt{19}})", 1, "equal as sets"},
  {"pm", R"(1+\sqrt{19}, 1-\sqrt{19})", R"(\boxed{1 \pm \sqrt{19}})", 1, "equal as sets"},
  {"pm", R"(1 \pm \sqrt{19})", R"(\boxed{1+\sqrt{19}})", 0, "missing"},
  {"pm", R"(3 \pm 2 \sqrt{2})", R"(the roots are $x = \boxed{3 \pm 2 \sqrt{2}}.$)", 1, "equal as sets"},
  {"pm", R"(\{1\pm\sqrt{5},-2\})", R"(so the answer is $\boxed{\{1\pm\sqrt{5},-2\}}.$)", 1, "equal as sets"},
  {"pm", R"(\{1\pm\sqrt{5},-2\})", R"(\boxed{-2, 1-\sqrt5, 1+\sqrt5})", 1, "equal as sets"},
  {"pm", R"(\pm 3)", R"(\boxed{x = \pm 3})", 1, "equal as sets"},
  {"pm", R"(\pm 3)", R"(\boxed{3, -3})", 1, "equal as sets"},
  {"pm", R"(\pm 3)", R"(\boxed{3})", 0, "missing"},

  // ---- \cdot, \times, \div
  {"operator", "12", R"(\boxed{3 \cdot 4})", 1, "exact"},
  {"operator", "12", R"(\boxed{3 \times 4})", 1, "exact"},
  {"operator", "12", R"(\boxed{3 * 4})", 1, "exact"},
  {"operator", "3", R"(\boxed{12 \div 4})", 1, "exact"},
  {"operator", "12", R"(\boxed{3 \times 5})", 0, "exact values differ"},
  {"operator", "12", "\\boxed{3 \xC3\x97 4}", 1, "exact"},

  // ---- percent
  {"percent", R"(28\%)", R"(\boxed{28})", 1, "percentage read as its number"},
  {"percent", R"(28\%)", R"(\boxed{0.28})", 1, "exact"},
  {"percent", R"(28\%)", "The answer is 28 percent.", 1, "exact"},
  {"percent", R"(28\%)", R"(\boxed{28 pct})", 1, "exact"},
  {"percent", R"(28\%)", R"(\boxed{28 \%})", 1, "exact"},
  {"percent", "0.28", R"(\boxed{28})", 0, "not within relative tolerance"},
  {"percent", "28/100", R"(\boxed{28})", 0, "exact values differ"},
  {"percent", "28", R"(\boxed{28/100})", 0, "exact values differ"},
  {"percent", R"(20\%)", R"(\boxed{\frac{1}{5}})", 1, "exact"},
  {"percent", R"(20\%)", R"(\boxed{25\%})", 0, "exact values differ"},
  {"percent", "100%", R"(\boxed{100\%})", 1, "exact"},

  // ---- degrees
  {"degree", R"(90^\circ)", R"(\boxed{90})", 1, "exact"},
  {"degree", R"(90^\circ)", R"(\boxed{90^{\circ}})", 1, "exact"},
  {"degree", R"(90^\circ)", R"(\boxed{\frac{\pi}{2}})", 1, "degrees read as radians"},
  {"degree", "30", R"(\boxed{30 degrees})", 1, "exact"},
  {"degree", R"(90^\circ)", R"(\boxed{45^\circ})", 0, "exact values differ"},
  {"degree", R"(\frac{1}{2})", R"(\boxed{\sin 30^\circ})", 1, "numerically"},
  {"degree", "25", "\\boxed{25\xC2\xB0}", 1, "exact"},

  // ---- text and units
  {"unit", "10", R"(\boxed{10\text{ cm}})", 1, "exact"},
  {"unit", "15", R"(\boxed{15\mbox{ cm}^2})", 1, "exact"},
  {"unit", R"(15\mbox{ cm}^2)", R"(the area is $\boxed{15\mbox{ cm}^2}.$)", 1, "exact"},
  {"unit", "125", R"(The distance is $\boxed{125\textnormal{ miles}}.$)", 1, "exact"},
  {"unit", "5", R"(\boxed{5 \text{ apples}})", 1, "exact"},
  {"unit", "5", R"(\boxed{5 apples})", 1, "exact"},
  {"unit", "18", R"(\boxed{\$18.00})", 1, "exact"},
  {"unit", "18", R"(\boxed{18 \text{ dollars}})", 1, "exact"},
  {"unit", "3", R"(\boxed{3 \text{ hours}})", 1, "exact"},
  {"unit", "40", R"(\boxed{40 mph})", 1, "exact"},
  {"unit", "1/3", R"($\frac{1}{3} \text{meters}$)", 1, "exact"},
  {"unit", "10", R"(\boxed{11 \text{ cm}})", 0, "exact values differ"},
  {"text", R"(\text{Evelyn})", R"(Therefore, $\boxed{\text{Evelyn}}$ is our answer.)", 1, "same text"},
  {"text", R"(\text{Evelyn})", R"(\boxed{\textbf{evelyn}})", 1, "same text"},
  {"text", R"(\text{Evelyn})", R"(\boxed{\text{Carla}})", 0, "text"},
  {"text", R"(\text{Monday})", R"(\boxed{Monday})", 1, "same text"},
  {"text", R"(\text{no solution})", R"(\boxed{\text{No Solution}})", 1, "same text"},
  {"text", "13", R"(\boxed{\text{13}})", 1, "exact"},  // MV: 0 (a \text{} number is a symbol there)

  // ---- \left, \right, spacing
  {"delimiter", "1/3", R"($\left( \frac{1}{3} \right)$)", 1, "exact"},
  {"delimiter", "(1,2)", R"(\boxed{\left( 1, 2 \right)})", 1, "in order"},
  {"delimiter", R"(\left( 3, \frac{\pi}{2} \right))", R"(the polar coordinates are $\boxed{\left( 3, \frac{\pi}{2} \right)}.$)", 1, "in order"},
  {"delimiter", "[0,1)", R"(\boxed{\left[ 0, 1 \right)})", 1, "sets of reals"},
  {"delimiter", R"(\{1, 2\})", R"(\boxed{\left\{ 1, 2 \right\}})", 1, "equal as sets"},
  {"spacing", "1000", R"(\boxed{1\!000})", 1, "exact"},
  {"spacing", "1000000", R"(\boxed{1\,000\,000})", 1, "exact"},
  {"spacing", R"(\frac{1}{2})", R"(\boxed{\frac{1}{\;2\;}})", 1, "exact"},
  {"spacing", "x+1", R"(\boxed{x\,+\,1})", 1, "sample points"},
  {"spacing", R"(\frac{1}{2})", R"(\boxed{\displaystyle\frac{1}{2}})", 1, "exact"},

  // ---- sets
  {"set", R"(\{1,2,3\})", R"(\boxed{\{3,2,1\}})", 1, "equal as sets"},
  {"set", R"(\{1,2,3\})", R"(\boxed{\{1,2\}})", 0, "missing"},
  {"set", R"(\{1,2\})", R"(\boxed{\{1,2,3\}})", 0, "is not in the reference"},
  {"set", R"(\{1,2\})", R"(\boxed{\{1,1,2\}})", 1, "equal as sets"},
  {"set", R"({1,3} \cup {2,4})", R"(\boxed{\{1,2,3,4\}})", 1, "equal as sets"},
  {"set", R"(\{\frac{1}{2}, \sqrt{2}\})", R"(\boxed{\{\sqrt2, 0.5\}})", 1, "equal as sets"},
  {"set", R"(\emptyset)", R"(\boxed{\varnothing})", 1, "equal as sets"},
  {"set", R"(\emptyset)", R"(\boxed{\{\}})", 1, "equal as sets"},
  {"set", R"(\{3\})", R"(\boxed{3})", 1, "equal as sets"},
  {"set", R"(\{1,2\})", R"(\boxed{(1,2)})", 0, "a set or list vs a tuple"},

  // ---- tuples and ordered pairs
  {"tuple", "(1,2)", R"(\boxed{(1, 2)})", 1, "in order"},
  {"tuple", "(1,2)", R"(\boxed{(2,1)})", 0, "element 1"},
  {"tuple", "(6,31,-1)", R"(we find $(p,q,r) = \boxed{(6,31,-1)}.$)", 1, "in order"},
  {"tuple", "(6,31,-1)", R"(\boxed{(6,31,1)})", 0, "element 3"},
  {"tuple", R"((1,\frac{9}{2}))", R"(\boxed{(1,4.5)})", 1, "in order"},
  {"tuple", R"(\left(\frac{4}{5},\frac{1}{5}\right))", R"(Thus, $(t,u) = \boxed{\left( \frac{4}{5}, \frac{1}{5} \right)}.$)", 1, "in order"},
  {"tuple", "(1,2,3)", R"(\boxed{(1,2)})", 0, "2 elements vs 3"},
  {"tuple", "(1,2)", R"(\boxed{1, 2})", 1, "in order"},
  {"tuple", "(3,1)", R"(\boxed{\{1,3\}})", 0, "a tuple vs a set"},
  {"tuple", "(1,3)", R"(\boxed{\{1,3\}})", 0, "a tuple vs a set"},  // MV: 1 (tuple compared with a set in order)
  {"tuple", R"(\langle 1, 2, 3 \rangle)", R"(\boxed{(1,2,3)})", 1, "in order"},
  {"tuple", R"((x, y) = (7, 6))", R"(the ordered pair $(x, y)$ that solves the system is $(7, 6)$.)", 1, "in order"},
  {"tuple", "(7, 6)", R"(\boxed{(x, y) = (7, 6)})", 1, "in order"},

  // ---- intervals
  {"interval", "[0,1)", R"(\boxed{[0,1)})", 1, "sets of reals"},
  {"interval", "[0,9)", R"(\boxed{[0,1)})", 0, "vs"},
  {"interval", "(0,9)", R"(\boxed{[0,9)})", 0, "open and closed ends differ"},
  {"interval", "[-2,7]", R"(\boxed{[-2, 7]})", 1, "sets of reals"},
  {"interval", R"((\frac{3}{5},\frac{8}{3}])", R"(\boxed{(0.6,\frac{16}{6}]})", 1, "sets of reals"},
  {"interval", R"((2, \infty))", R"(\boxed{(2, \infty)})", 1, "in order"},
  {"interval", R"((2, \infty))", R"(\boxed{(2, \infty) \cup (3, 4)})", 1, "sets of reals"},
  {"interval", R"((2, \infty))", R"(\boxed{[2, \infty)})", 0, "open and closed ends differ"},
  {"interval", R"((-\infty, 0])", R"(\boxed{(-\infty,0]})", 1, "sets of reals"},
  {"interval", R"((-\infty, \infty))", R"(\boxed{\mathbb{R}})", 1, "sets of reals"},
  {"interval", "[0,1)", R"(The final answer is $(0, 1)$. I hope it is correct.)", 0, "open and closed"},
  {"interval", R"([-4,0])", R"(Thus, the values are: \[ \boxed{[-4, 0]} \])", 1, "sets of reals"},

  // ---- unions of intervals
  {"union", R"((-\infty, 3) \cup (3, \infty))", R"(\boxed{(-\infty,3)\cup(3,\infty)})", 1, "sets of reals"},
  {"union", R"((-\infty, 3) \cup (3, \infty))", R"(\boxed{(3,\infty)\cup(-\infty,3)})", 1, "sets of reals"},
  {"union", R"((-\infty, 3) \cup (3, \infty))", R"(\boxed{(-\infty, \infty)})", 0, "pieces"},
  {"union", "[0,2]", R"(\boxed{[0,1) \cup [1,2]})", 1, "sets of reals"},
  {"union", "(0,2)", R"(\boxed{(0,1) \cup \{1\} \cup (1,2)})", 1, "sets of reals"},
  {"union", R"([-1, -\frac{1}{2}) \cup (-\frac{1}{2}, 0) \cup (0, 1) \cup (1, \infty))", R"(The solution set is $\boxed{[-1, -\tfrac12) \cup (-\tfrac12, 0) \cup (0, 1) \cup (1, \infty)}.$)", 1, "sets of reals"},
  {"union", R"(\{-1\} \cup [0,7))", R"(x \in \boxed{\{-1\} \cup [0,7)}.$)", 1, "sets of reals"},
  {"union", R"((2, 12) \cup (12, 102))", R"(Thus, the answer is $x \in \boxed{(2,12) \cup (12,102)}$)", 1, "sets of reals"},
  {"union", R"([-3,2])", R"(the domain is $\boxed{(-\infty, -3] \cup [2, \infty)}$)", 0, "pieces"},
  {"union", R"((-\infty, -3] \cup [2, \infty))", R"(\boxed{x \le -3 \text{ or } x \ge 2})", 1, "sets of reals"},

  // ---- equations
  {"equation", "x = 11", R"($x = 5+5+1 = 7 =11$)", 1, "exact"},
  {"equation", "x = 1/3", R"($x = 5+5+1 = 1/3 \approx 11$)", 1, "exact"},
  {"equation", "1/3", R"($x=1/3\approx1.3$)", 1, "exact"},
  {"equation", "11", R"($x\approx11$)", 1, "exact"},
  {"equation", "k=1", "$1$", 1, "exact"},
  {"equation", "z = 1 + 1 = 2", "$z = 3+3 = 2$", 1, "exact"},
  {"equation", "7 = 11a+c", "$11a+c$", 0, "an equation or inequality vs"},
  {"equation", "a +3z = 0", "$0$", 0, "an equation or inequality vs"},
  {"equation", "2x + z = 1", "$1$", 0, "an equation or inequality vs"},
  {"equation", "2x+4y-3=0", R"($y=-\frac{1}{2}x+\frac{3}{4}$)", 1, "proportional"},
  {"equation", "x^2/4 + y^2/3 = 1", "$x^2/16 + y^2/12 = 1/4$", 1, "proportional"},
  {"equation", "34x+45y-20z+100=0", "$-34x-45y+20z-100=0$", 1, "proportional"},
  {"equation", "x-2y+z-1=0", R"($$-1(x-1)+2(y-1)+1(z-1)=0\Rightarrow\boxed{x-2y+z-1=0}.$$)", 1, ""},
  {"equation", "y = 2x + 1", R"(\boxed{y = 2x + 2})", 0, "differ at"},
  {"equation", "y = 2x + 1", R"(\boxed{z = 2x + 1})", 0, "not proportional"},
  {"equation", "x = 3", R"(\boxed{2x = 6})", 1, "proportional"},
  {"equation", "x = 3", R"(\boxed{x^2 = 9})", 0, "not proportional"},
  {"equation", "3", R"(\boxed{3 = x})", 1, "exact"},
  {"equation", "f(x) = 2x+1", R"(\boxed{2x+1})", 1, "sample points"},
  {"equation", "x = 3, y = 5", R"(\boxed{y = 5, x = 3})", 1, "same values"},
  {"equation", "x = 3, y = 5", R"(\boxed{x = 5, y = 3})", 0, "x:"},
  {"equation", "(3, 5)", R"(\boxed{x = 3, y = 5})", 1, "in order"},
  {"equation", "x = 2 or x = 3", R"(\boxed{2, 3})", 1, "equal as sets"},
  {"equation", "n = 1, -2", R"(\boxed{-2} \text{ and } \boxed{1})", 1, "equal as sets"},

  // ---- inequalities
  {"inequality", "x >= 5", R"(Therefore $x \geq 5$ is the solution.)", 1, "sets of reals"},
  {"inequality", "x < 3", R"(We find that $x \lt 3$.)", 1, "sets of reals"},
  {"inequality", R"(x \leq 2)", R"(Thus $x <= 2$ is our answer.)", 1, "sets of reals"},
  {"inequality", "x > 5", R"(Therefore $x \gt 5$ is the solution.)", 1, "sets of reals"},
  {"inequality", "x != 3", R"(We find that $x \neq 3$.)", 1, "sets of reals"},
  {"inequality", "x > 5", R"(Therefore $x < 5$ is the solution.)", 0, "vs"},
  {"inequality", R"(x \geq 5)", R"(The solution is $x \leq 5$)", 0, "vs"},
  {"inequality", R"(x \leq 5)", R"($5 \geq x$)", 1, "sets of reals"},
  {"inequality", R"(x \geq 5)", R"($5 \leq x$)", 1, "sets of reals"},
  {"inequality", "x < 1", "$-x > -1$", 1, "proportional"},
  {"inequality", "x < 1", "$x > -1$", 0, "vs"},
  {"inequality", "x <= 1", "$-x >= -1$", 1, "proportional"},
  {"inequality", "x < 1", R"($x \le 1$)", 0, "open and closed ends differ"},
  {"inequality", R"(-2 \le x \le 7)", R"($x \in [-2,7]$)", 1, "sets of reals"},
  {"inequality", R"(x \in [-2,7])", R"($-2 \le x \le 7$)", 1, "sets of reals"},  // MV: 0 unless allow_set_relation_comp
  {"inequality", R"(x > 5)", R"(\boxed{(5, \infty)})", 1, "sets of reals"},
  {"inequality", R"([-2, 7])", R"(\boxed{-2 \le x \le 7})", 1, "sets of reals"},
  {"inequality", R"(1 < x < 2)", R"(\boxed{(1,2)})", 1, "sets of reals"},
  {"inequality", "2x + y > 3", R"(\boxed{4x + 2y > 6})", 1, "proportional"},
  {"inequality", "2x + y > 3", R"(\boxed{-4x - 2y > -6})", 0, "other way"},
  {"inequality", "f(2) < f(1) < f(4)", R"(Hence, $\boxed{f(2) < f(1) < f(4)}.$)", 1, "chain"},
  {"inequality", "f(2) < f(1) < f(4)", R"(\boxed{f(4) > f(1) > f(2)})", 1, "chain"},

  // ---- lists of answers
  {"list", "-2,1", R"(the only integer roots are $\boxed{-2,1}.$)", 1, "equal as sets"},
  {"list", "1,-2", R"(The integers are \boxed{-2} and \boxed{1}.)", 1, "equal as sets"},
  {"list", R"(\boxed{1}\boxed{2})", R"($\boxed{1,2}$)", 1, "equal as sets"},
  {"list", "1, 2, 3", R"(\boxed{1; 2; 3})", 1, "equal as sets"},
  {"list", "1, 2, 3", R"(\boxed{1, 2, 3, \ldots})", 0, "not in the reference"},
  {"list", R"(12\text{ and }13)", R"(between $\boxed{12 \text{ and } 13}$.)", 1, "equal as sets"},
  {"list", "2, 3", R"(\boxed{2 \text{ or } 3})", 1, "equal as sets"},
  {"list", "2, 3", R"(\boxed{2})", 0, "missing"},

  // ---- matrices
  {"matrix", R"(\begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix})", R"(The identity matrix is $ \begin{pmatrix}1 & 0 \\ 0 & 1\end{pmatrix} $.)", 1, "in order"},
  {"matrix", R"(\begin{bmatrix}0 & 0 \\0 & 0\end{bmatrix})", R"(Here is a zero matrix: $ \begin{pmatrix}0 & 0 \\0 & 0\end{pmatrix} $)", 1, "in order"},
  {"matrix", R"(\begin{pmatrix}1 & 2 \\3 & 4\end{pmatrix})", R"(Special matrix: $ \left[\begin{array}{cc}1 & 2 \\3 & 4\end{array}\right] $)", 1, "in order"},
  {"matrix", R"(\begin{pmatrix}\frac{1}{2} & \frac{3}{4} \\ \frac{5}{6} & \frac{7}{8}\end{pmatrix})", R"($ \begin{pmatrix}0.5 & 0.75 \\ \frac{5}{6} & 0.875\end{pmatrix} $)", 1, "in order"},
  {"matrix", R"(\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix})", R"(The matrix is $\begin{pmatrix}1 & 2 \\ 3 & 5\end{pmatrix}$)", 0, "element 4"},
  {"matrix", R"(\begin{pmatrix}1 & 2 \\ 3 & 4\end{pmatrix})", R"(\boxed{\begin{pmatrix}1 & 3 \\ 2 & 4\end{pmatrix}})", 0, "element 2"},
  {"matrix", R"(\begin{pmatrix}1 & 2\end{pmatrix})", R"(\boxed{\begin{pmatrix}1 \\ 2\end{pmatrix}})", 0, "matrix vs"},
  {"matrix", R"(\begin{pmatrix} 3 \\ 2 \\ -6 \end{pmatrix})", R"(\boxed{(3, 2, -6)})", 1, "in order"},
  {"matrix", "\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.", "\\boxed{\n\\begin{pmatrix} 0 & 3 \\\\ 0 & -1 \\end{pmatrix}\n}.", 1, "in order"},
  {"matrix", R"(\begin{pmatrix}-\frac{7}{4}&-2\\4&\frac{1}{4}\end{pmatrix})", R"(\boxed{\begin{pmatrix}-1.75&-2\\4&0.25\end{pmatrix}})", 1, "in order"},

  // ---- multiple choice
  {"choice", "C", R"(The answer is \boxed{C}.)", 1, "choice C vs C"},
  {"choice", "C", R"(\boxed{(C)})", 1, "choice"},
  {"choice", R"(\text{C})", R"($\boxed{\text{(C)}}.$)", 1, "choice"},
  {"choice", "(C)", R"(\boxed{\textbf{(C) } 12})", 1, "choice"},
  {"choice", "C", "The answer is (C).", 1, "choice"},
  {"choice", "C", R"(\boxed{c})", 1, "choice"},
  {"choice", "C", R"(\boxed{D})", 0, "choice D vs C"},
  {"choice", "C", R"(\boxed{12})", 0, "not a choice letter"},
  {"choice", R"(\text{E})", "$E$", 1, "choice"},

  // ---- multiple-answer extraction: boxes, phrases, spans
  {"extract", "7", R"(So the answer is $\boxed{7}$.)", 1, "exact"},
  {"extract", "7", R"(First \boxed{6}, then corrected: \boxed{7})", 1, "exact"},
  {"extract", "7", R"(First \boxed{7}, then corrected: \boxed{6})", 0, "exact values differ"},
  {"extract", "9", R"(\boxed{8} then \fbox{9})", 1, "exact"},
  {"extract", "7", R"(\boxed{{7}})", 1, "exact"},
  {"extract", "34", R"(Final Answer: The largest $n$ is 34.)", 1, "exact"},
  {"extract", R"(28\%)", R"(The final answer is $28 \%$. I hope it is correct.)", 1, "exact"},
  {"extract", "72", "48 + 24 = 72\n#### 72", 1, "exact"},
  {"extract", "#### 72", "She sold 72 clips.\n#### 72", 1, "exact"},
  {"extract", "2/3", "So P(A) = (1/2) / (3/4) = 2/3. Therefore, the probability that Alice wins the game is 2/3.", 1, "exact"},
  {"extract", "12", "Therefore, there are 12 distinct arithmetic sequences that meet the three given conditions.", 1, "exact"},
  {"extract", "7.78", R"($\frac{70}{9} \approx 7.78$ So, Anna pays approximately $7.78 for her fudge. Final Answer: The final answer is 7.78.)", 1, "exact"},
  {"extract", "189", "**Final Answer**\n\\boxed{189}\n</think>\n\nThus, the area of the trapezoid is \\(\\boxed{189}\\) square centimeters.", 1, "exact"},
  {"extract", "5", "<think>maybe \\boxed{4}</think> The answer is \\boxed{5}", 1, "exact"},
  {"extract", "4", "<think>maybe \\boxed{4}</think> The answer is \\boxed{5}", 0, "exact values differ"},
  {"extract", "2", "AZYUK2A", 0, "no answer"},
  {"extract", "5", "I do not know.", 0, "no answer found"},
  {"extract", "5", "", 0, "no answer found"},
  {"extract", "5", R"(\boxed{})", 0, "empty box"},
  {"extract", "10", R"(the answer: $x = 10$)", 1, "exact"},
  {"extract", R"(\frac{1}{3})", R"(The answer is $\frac{1}{3}.$)", 1, "exact"},
  {"extract", "2", R"($2^{10}.$)", 0, "exact values differ"},
  {"extract", R"(\boxed{4})", R"(\boxed{4.0})", 1, "exact"},
  {"extract", "1, 2, 3", R"($1, 2, 3, ...$)", 0, "not in the reference"},

  // ---- traps of string-matching verifiers
  {"trap-code", "7", "```python\nprint('\\\\boxed{8}')\n```\nSo the answer is \\boxed{7}.", 1, "exact"},
  {"trap-code", "8", "```python\nprint('\\\\boxed{8}')\n```\nSo the answer is \\boxed{7}.", 0, "exact values differ"},
  {"trap-code", "12", "```python\nx = 12\nprint(f'\\\\boxed{{{x}}}')\n```", 0, "no answer"},
  {"trap-code", "12", "Running `print(\\\\boxed{3})` shows the answer is 12.", 1, "exact"},
  {"trap-code", "7", "```latex\n\\boxed{7}\n```", 1, "exact"},
  {"trap-several", "-2, 1", R"(\boxed{-2} and \boxed{1})", 1, "equal as sets"},
  {"trap-several", "1", R"(Is it \boxed{2}? No: the answer is \boxed{1}.)", 1, "exact"},
  {"trap-several", "2", R"(Is it \boxed{2}? No: the answer is \boxed{1}.)", 0, "exact values differ"},
  {"trap-truncated", "7", R"(\boxed{7} and then \boxed{8)", 0, "truncated"},
  {"trap-truncated", "7", R"(The answer is \boxed{7)", 0, "truncated"},
  {"trap-truncated", R"(\frac{1}{2})", R"(so \boxed{\frac{1}{2})", 0, "truncated"},
  {"trap-truncated", "7", R"(The answer is \boxed)", 0, "truncated"},
  {"trap-units", "10", R"(\boxed{10 \text{ cm}^2})", 1, "exact"},
  {"trap-units", R"(10\text{ cm})", R"(\boxed{10})", 1, "exact"},
  {"trap-units", "5", R"(\boxed{5\text{ km/h}})", 1, "exact"},
  {"trap-units", "25", R"(\boxed{25^\circ C})", 1, "exact"},
  {"trap-approx", "3.14", R"(\boxed{\approx 3.14})", 1, "exact"},
  {"trap-approx", R"(\pi)", R"(\boxed{\approx 3.14})", 0, "differ numerically"},
  {"trap-approx", "3.14", "The answer is approximately 3.14.", 1, "exact"},
  {"trap-approx", R"(\sqrt{2})", R"(\boxed{\text{approximately } 1.41})", 0, "differ numerically"},
  {"trap-approx", R"(\sqrt{2})", R"(\boxed{1.41421356})", 1, "tolerance"},
  {"trap-approx", R"(\frac{1}{3})", "The final answer is $0.3333$. I hope it is correct.", 0, "not within relative tolerance"},  // MV: 1 at precision 4

  // ---- free variables
  {"variables", R"(\frac{x+2}{7})", R"(\boxed{\frac{x}{7}+\frac{2}{7}})", 1, "sample points"},
  {"variables", R"(\tan^2(y)+1)", R"(\boxed{\sec^2(y)})", 1, "sample points"},
  {"variables", R"(\sin^2 x + \cos^2 x)", R"(\boxed{1})", 1, "sample points"},
  {"variables", R"(\frac{1}{3\sqrt[3]{x}^2})", R"(\boxed{\frac{1}{3x^{2/3}}})", 1, "sample points"},
  {"variables", "x", R"(\boxed{|x|})", 0, "differ at"},
  {"variables", R"(\sqrt{x^2})", R"(\boxed{|x|})", 1, "sample points"},
  {"variables", R"(\log(x^2))", R"(\boxed{2\ln x})", 1, "sample points"},
  {"variables", R"(e^{x+y})", R"(\boxed{e^x e^y})", 1, "sample points"},
  {"variables", "(x+1)^5", R"(\boxed{x^5+5x^4+10x^3+10x^2+5x+1})", 1, "sample points"},
  {"variables", "(x+1)^5", R"(\boxed{x^5+5x^4+10x^3+10x^2+5x+2})", 0, "differ at"},
  {"variables", R"(\alpha + \beta)", R"(\boxed{\beta+\alpha})", 1, "sample points"},
  {"variables", "x_1 + x_2", R"(\boxed{x_{2} + x_{1}})", 1, "sample points"},
  {"variables", "2x", R"(\boxed{2y})", 0, "differ at"},

  // ---- base numerals
  {"base", "204_5", R"(for a quotient of $\boxed{204_5}$.)", 1, "same numeral"},
  {"base", "1112112_3", R"(\boxed{1112122_3})", 0, "vs"},
  {"base", "204_5", R"(\boxed{54})", 0, "another base"},
  {"base", "204_{5}", R"(\boxed{0204_5})", 1, "same numeral"},

  // ---- functions
  {"function", "120", R"(\boxed{5!})", 1, "exact"},
  {"function", "10", R"(\boxed{\binom{5}{2}})", 1, "exact"},
  {"function", "3", R"(\boxed{|-3|})", 1, "exact"},
  {"function", "3", R"(\boxed{\lfloor 3.7 \rfloor})", 1, "exact"},
  {"function", "4", R"(\boxed{\lceil 3.2 \rceil})", 1, "exact"},
  {"function", "3", R"(\boxed{\log_2 8})", 1, "numerically"},
  {"function", "2", R"(\boxed{\log_{10} 100})", 1, "numerically"},
  {"function", "0", R"(\boxed{\ln 1})", 1, "exact"},
  {"function", R"(\frac{\pi}{4})", R"(\boxed{\arctan 1})", 1, "numerically"},
  {"function", R"(\frac{\pi}{6})", R"(\boxed{\sin^{-1}(1/2)})", 1, "numerically"},
  {"function", "6", R"(\boxed{\gcd(12, 18)})", 1, "exact"},
  {"function", R"(\frac{\sqrt{3}}{2})", R"(\boxed{\cos\frac{\pi}{6}})", 1, "numerically"},

  // ---- unparseable: normalised string fallback
  {"fallback", "3:4", R"(\boxed{3:4})", 1, "normalised strings equal"},
  {"fallback", "3:4", R"(\boxed{4:3})", 0, "normalised strings differ"},
  {"fallback", R"(\frac{1}{0})", R"(\boxed{\frac{1}{0}})", 1, "normalised strings equal"},
  {"fallback", R"(A \cap B)", R"(\boxed{A\cap B})", 1, "normalised strings equal"},
  {"fallback", R"(\overrightarrow{AB})", R"(\boxed{\overrightarrow{AB}})", 1, "normalised strings equal"},
  {"fallback", R"(\overrightarrow{AB})", R"(\boxed{\overrightarrow{BA}})", 0, "normalised strings differ"},
  {"fallback", "1000", "1 000", 0, "exact values differ"},  // MV: 1 (a space as thousands separator)

  // ---- work budget: huge powers, factorials, nesting, long input
  {"budget", "2^{10^9}", R"(\boxed{2^{10^9}})", 1, "normalised strings equal"},
  {"budget", "5", R"(\boxed{2^{10^9}})", 0, "not comparable"},
  {"budget", "1", R"(\boxed{9^{9^{9^{9}}}})", 0, "not comparable"},
  {"budget", "1", R"(\boxed{(10^{10})!})", 0, "not comparable"},
  {"budget", R"(2^{1000})", R"(\boxed{2^{500} \cdot 2^{500}})", 1, "exact"},
  {"budget", R"(2^{1000})", R"(\boxed{2^{1000}+1})", 0, "exact values differ"},
  {"budget", "1", R"(\boxed{(((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1)))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))})", 0, "nested too deeply"},
  };
  return *cases;
}
// clang-format on

TEST(MathVerifierTest, CaseTable) {
  auto v = MakeVerifier("math");
  ASSERT_TRUE(v.ok()) << v.status();
  std::map<std::string, int> per_construct;
  int failures = 0;
  for (const MathCase& c : Cases()) {
    ++per_construct[c.construct];
    const VerdictDetail d = (*v)->Explain(c.answer, c.completion);
    const bool reward_ok = d.verdict.reward == c.reward;
    const bool reason_ok = d.verdict.reason.find(c.reason) != std::string::npos;
    if (!reward_ok || !reason_ok) ++failures;
    EXPECT_TRUE(reward_ok && reason_ok)
        << "[" << c.construct << "] answer='" << c.answer << "' completion='" << c.completion
        << "'\n  want reward " << c.reward << " reason containing '" << c.reason << "'"
        << "\n  got reward " << d.verdict.reward << " reason '" << d.verdict.reason
        << "' extracted='" << d.extracted << "' parsed=" << d.parsed_completion.value_or("null")
        << " reference=" << d.parsed_answer.value_or("null");
  }
  EXPECT_GE(Cases().size(), 250u);
  EXPECT_EQ(failures, 0);
}

// Both directions: every row whose completion is a single box must give the
// same verdict with the two sides swapped, except where the reference and the
// completion are read differently on purpose (choices, truncation, lists of
// boxes, code).
TEST(MathVerifierTest, SymmetricWhereBothSidesAreAnswers) {
  auto v = MakeVerifier("math");
  ASSERT_TRUE(v.ok());
  int checked = 0;
  for (const MathCase& c : Cases()) {
    const std::string completion = c.completion;
    if (completion.rfind("\\boxed{", 0) != 0 || completion.back() != '}') continue;
    if (completion.find("\\boxed{", 1) != std::string::npos) continue;
    const std::string inner = completion.substr(7, completion.size() - 8);
    int depth = 0;
    bool balanced = true;
    for (char ch : inner) {
      depth += ch == '{' ? 1 : (ch == '}' ? -1 : 0);
      balanced = balanced && depth >= 0;
    }
    if (!balanced || depth != 0 || inner.find("\\fbox") != std::string::npos) continue;
    const std::string construct = c.construct;
    if (construct == "choice" || construct == "budget" || construct == "fallback") continue;
    if (std::string(c.answer).find('\n') != std::string::npos) continue;
    const Verdict forward = (*v)->Verify(c.answer, completion);
    const Verdict backward = (*v)->Verify(inner, absl::StrCat("\\boxed{", c.answer, "}"));
    EXPECT_EQ(forward.reward, backward.reward)
        << c.answer << " vs " << inner << ": " << forward.reason << " / " << backward.reason;
    ++checked;
  }
  EXPECT_GT(checked, 150);
}

TEST(MathVerifierTest, FormatReward) {
  auto v = MakeVerifier("math", 0.2);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)->Verify("7", "\\boxed{7}").reward, 1.0);
  EXPECT_EQ((*v)->Verify("7", "\\boxed{8}").reward, 0.2);        // boxed and parsed
  EXPECT_EQ((*v)->Verify("7", "The answer is 8.").reward, 0.2);  // a final-answer phrase
  EXPECT_EQ((*v)->Verify("7", "so it is 8").reward, 0.0);        // only the last number
  EXPECT_EQ((*v)->Verify("7", "\\boxed{}").reward, 0.0);
  EXPECT_EQ((*v)->Verify("7", "\\boxed{8").reward, 0.0);
  EXPECT_EQ((*v)->Verify("7", "\\boxed{3:4}").reward, 0.0);  // does not parse
  EXPECT_EQ((*v)->Verify("C", "\\boxed{D}").reward, 0.2);
}

TEST(MathVerifierTest, ExplainGivesWhatItSaw) {
  auto v = MakeVerifier("math");
  ASSERT_TRUE(v.ok());
  VerdictDetail d = (*v)->Explain("\\frac{1}{2}", "so $x = \\boxed{\\dfrac{2}{4}}$");
  EXPECT_EQ(d.verdict.reward, 1.0);
  EXPECT_EQ(d.extracted, "\\dfrac{2}{4}");
  EXPECT_TRUE(d.well_formed);
  EXPECT_EQ(d.parsed_completion, "2/4");
  EXPECT_EQ(d.parsed_answer, "1/2");
  d = (*v)->Explain("3:4", "\\boxed{3:4}");
  EXPECT_EQ(d.parsed_completion, std::nullopt);
  EXPECT_EQ(d.parsed_answer, std::nullopt);
  EXPECT_FALSE(d.well_formed);
  d = (*v)->Explain("5", "nothing here");
  EXPECT_EQ(d.extracted, "");
  EXPECT_EQ(d.parsed_answer, "5");
}

TEST(MathVerifierTest, ToleranceIsConfigurable) {
  VerifierOptions loose;
  loose.math_relative_tolerance = 1e-3;
  auto v = MakeVerifier("math", loose);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ((*v)->Verify("\\frac{1}{3}", "\\boxed{0.3333}").reward, 1.0);
  EXPECT_EQ((*v)->Verify("\\pi", "\\boxed{3.14}").reward, 1.0);  // 5e-4 relative
  EXPECT_EQ((*v)->Verify("\\pi", "\\boxed{3.1}").reward, 0.0);   // 1.3e-2 relative
  VerifierOptions bad;
  bad.math_relative_tolerance = 0;
  EXPECT_FALSE(MakeVerifier("math", bad).ok());
  bad.math_relative_tolerance = 0.5;
  EXPECT_FALSE(MakeVerifier("math", bad).ok());
}

// Pathological inputs finish quickly: the work budget and the parser's limits
// stop them (bounded by time here only as a sanity check of the bound, with a
// generous limit for a loaded machine).
TEST(MathVerifierTest, PathologicalInputsStopQuickly) {
  auto v = MakeVerifier("math");
  ASSERT_TRUE(v.ok());
  std::vector<std::pair<std::string, std::string>> inputs = {
      {"1", "\\boxed{" + std::string(3000, '(') + "1" + std::string(3000, ')') + "}"},
      {"1", "\\boxed{" + std::string(20000, '9') + "}"},
      {"1", "\\boxed{2^{2^{2^{2^{2^{2^{2^{2^{2}}}}}}}}}"},
      {"1", "\\boxed{\\frac{1}{\\frac{1}{\\frac{1}{\\frac{1}{\\frac{1}{\\frac{1}{x}}}}}}}"},
      {"1", "\\boxed{" + std::string(2000, '{') + std::string(2000, '}') + "}"},
      {"x", "\\boxed{(x+1)^{1000000}}"},
      {"\\{1,2\\}", "\\boxed{\\{" + absl::StrCat(std::string(1000, '1'), ",") + "2\\}}"},
      {"1", "\\boxed{" + std::string(5000, 'x') + "}"},
      {"1", std::string(200000, '$')},
      {"1", std::string(100000, '\\') + "boxed{"},
  };
  std::string many;
  for (int k = 0; k < 300; ++k) absl::StrAppend(&many, k, ", ");
  inputs.push_back({"1", "\\boxed{\\{" + many + "1\\}}"});
  inputs.push_back({"\\{" + many + "1\\}", "\\boxed{\\{" + many + "1\\}}"});
  for (const auto& [answer, completion] : inputs) {
    const auto start = std::chrono::steady_clock::now();
    const Verdict verdict = (*v)->Verify(answer, completion);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 2.0) << completion.substr(0, 80) << ": " << verdict.reason;
    EXPECT_EQ(verdict.reward, answer == completion.substr(7, completion.size() - 8) ? 1.0 : 0.0)
        << completion.substr(0, 80) << ": " << verdict.reason;
  }
}

}  // namespace
}  // namespace rlvr
