// The parsed form of a template (internal to common/jinja): expressions and
// statements, each with the line and column it starts at. Built by
// ParseTemplate (parser.h) and walked by the renderer (template.cc).
#ifndef RLVR_COMMON_JINJA_AST_H_
#define RLVR_COMMON_JINJA_AST_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/jinja/value.h"

namespace rlvr::jinja {

struct SourcePos {
  int line = 1;
  int column = 1;
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,   // literal
    kName,      // name
    kList,      // children
    kTuple,     // children
    kDict,      // children: key, value, key, value, ...
    kGetAttr,   // children[0].name
    kGetItem,   // children[0][children[1]]
    kSlice,     // children[0][children[1]:children[2]:children[3]] (null = omitted)
    kCall,      // children[0](children[1..], kwargs)
    kFilter,    // children[0] | name(children[1..], kwargs)
    kTest,      // children[0] is [not] name(children[1..], kwargs)
    kNeg,       // -children[0]
    kPos,       // +children[0]
    kNot,       // not children[0]
    kBinary,    // children[0] name children[1]: + - * / // % ** ~
    kAnd,       // children[0] and children[1]
    kOr,        // children[0] or children[1]
    kCompare,   // children[0] ops[0] children[1] ops[1] ... (== != < <= > >= in notin)
    kCondExpr,  // children[1] if children[0] else children[2] (null: undefined)
  };
  Kind kind;
  SourcePos pos;
  Value literal;
  std::string name;
  std::vector<ExprPtr> children;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;
  bool negated = false;  // kTest: `is not`.
  int height = 1;        // 1 + the tallest operand's height.
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

struct Node {
  enum class Kind {
    kText,      // text
    kOutput,    // {{ expr }}
    kIf,        // conds[i] -> bodies[i]; bodies.size() == conds.size() + 1 with else
    kFor,       // for targets in expr [if filter]: bodies[0]; else: bodies[1]
    kSet,       // targets = expr, or targets[0].attr = expr
    kSetBlock,  // {% set targets[0] %}bodies[0]{% endset %}
    kMacro,     // {% macro name(params=defaults) %}bodies[0]{% endmacro %}
    kBreak,
    kContinue,
    kFilterBlock,  // {% filter expr %}bodies[0]{% endfilter %}: expr is a kFilter chain
                   // whose innermost operand is null.
    kScope,        // {% generation %}bodies[0]{% endgeneration %}: rendered as is.
  };
  Kind kind;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;
  std::vector<ExprPtr> conds;
  std::vector<Body> bodies;
  std::vector<std::string> targets;
  std::string attr;
  std::string name;
  std::vector<std::string> params;
  std::vector<ExprPtr> defaults;  // One per param; null when it has none.
};

}  // namespace rlvr::jinja

#endif  // RLVR_COMMON_JINJA_AST_H_
