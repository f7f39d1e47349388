#include "common/math/print.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace rlvr::math {
namespace {

// Binding strength: a child binding looser than its context is parenthesised.
enum Level {
  kLevelRelation = 0,
  kLevelSum = 1,
  kLevelProduct = 2,
  kLevelUnary = 3,
  kLevelPower = 4,
  kLevelAtom = 5
};

const char* RelText(RelOp op) {
  switch (op) {
    case RelOp::kEq:
      return " = ";
    case RelOp::kNe:
      return " != ";
    case RelOp::kLt:
      return " < ";
    case RelOp::kLe:
      return " <= ";
    case RelOp::kGt:
      return " > ";
    case RelOp::kGe:
      return " >= ";
    case RelOp::kApprox:
      return " ~= ";
    case RelOp::kIn:
      return " in ";
  }
  return " ? ";
}

class Printer {
 public:
  explicit Printer(const Expr& expr) : e_(expr) {}

  std::string Print(int node, int context) {
    int level = kLevelAtom;
    std::string s = Body(node, &level);
    if (level < context) return absl::StrCat("(", s, ")");
    return s;
  }

 private:
  std::string List(const std::vector<int>& kids, const char* sep) {
    std::vector<std::string> parts;
    parts.reserve(kids.size());
    for (int k : kids) parts.push_back(Print(k, kLevelRelation));
    return absl::StrJoin(parts, sep);
  }

  std::string Body(int node, int* level) {
    const Node& n = e_.at(node);
    switch (n.kind) {
      case Kind::kNumber:
        if (n.value.negative()) *level = kLevelUnary;
        if (!n.value.is_integer() && !n.decimal) *level = kLevelProduct;
        return n.decimal && !n.name.empty() ? n.name : n.value.ToString();
      case Kind::kConstant:
      case Kind::kVariable:
        return n.name;
      case Kind::kAdd: {
        *level = kLevelSum;
        std::string s = Print(n.kids[0], kLevelSum);
        for (size_t k = 1; k < n.kids.size(); ++k) {
          const Node& t = e_.at(n.kids[k]);
          if (t.kind == Kind::kNeg) {
            absl::StrAppend(&s, " - ", Print(t.kids[0], kLevelProduct));
          } else if (t.kind == Kind::kPlusMinus) {
            absl::StrAppend(&s, t.name == "mp" ? " -+ " : " +- ", Print(t.kids[0], kLevelProduct));
          } else {
            absl::StrAppend(&s, " + ", Print(n.kids[k], kLevelProduct));
          }
        }
        return s;
      }
      case Kind::kMul: {
        *level = kLevelProduct;
        if (n.call && n.kids.size() == 2) {
          *level = kLevelAtom;
          return absl::StrCat(Print(n.kids[0], kLevelAtom), "(", Print(n.kids[1], kLevelRelation),
                              ")");
        }
        std::vector<std::string> parts;
        for (int k : n.kids) parts.push_back(Print(k, kLevelUnary));
        return absl::StrJoin(parts, "*");
      }
      case Kind::kDiv:
        *level = kLevelProduct;
        return absl::StrCat(Print(n.kids[0], kLevelProduct), "/", Print(n.kids[1], kLevelUnary));
      case Kind::kNeg:
        *level = kLevelUnary;
        return absl::StrCat("-", Print(n.kids[0], kLevelUnary));
      case Kind::kPlusMinus:
        *level = kLevelUnary;
        return absl::StrCat(n.name == "mp" ? "-+" : "+-", Print(n.kids[0], kLevelUnary));
      case Kind::kPow:
        *level = kLevelPower;
        return absl::StrCat(Print(n.kids[0], kLevelAtom), "^", Print(n.kids[1], kLevelAtom));
      case Kind::kFunction:
        if (n.name == "factorial") return absl::StrCat(Print(n.kids[0], kLevelAtom), "!");
        if (n.name == "abs") return absl::StrCat("|", Print(n.kids[0], kLevelRelation), "|");
        return absl::StrCat(n.name, "(", List(n.kids, ", "), ")");
      case Kind::kPercent:
        *level = kLevelPower;
        return absl::StrCat(Print(n.kids[0], kLevelAtom), "%");
      case Kind::kDegree:
        *level = kLevelPower;
        return absl::StrCat(Print(n.kids[0], kLevelAtom), "\xC2\xB0");
      case Kind::kBaseNumeral:
        return absl::StrCat(n.name, "_", n.base);
      case Kind::kTuple:
        return absl::StrCat("(", List(n.kids, ", "), ")");
      case Kind::kSet:
        return absl::StrCat("{", List(n.kids, ", "), "}");
      case Kind::kList:
        *level = kLevelRelation;
        return List(n.kids, n.name == "or" ? " or " : ", ");
      case Kind::kInterval:
        return absl::StrCat(n.left_open ? "(" : "[", List(n.kids, ", "), n.right_open ? ")" : "]");
      case Kind::kUnion:
        *level = kLevelSum;
        return List(n.kids, " U ");
      case Kind::kRelation: {
        *level = kLevelRelation;
        std::string s = Print(n.kids[0], kLevelSum);
        for (size_t k = 1; k < n.kids.size(); ++k) {
          absl::StrAppend(&s, RelText(n.ops[k - 1]), Print(n.kids[k], kLevelSum));
        }
        return s;
      }
      case Kind::kMatrix: {
        std::vector<std::string> rows;
        for (int r = 0; r < n.rows; ++r) {
          std::vector<std::string> cells;
          for (int c = 0; c < n.cols; ++c) {
            cells.push_back(Print(n.kids[static_cast<size_t>(r * n.cols + c)], kLevelRelation));
          }
          rows.push_back(absl::StrCat("[", absl::StrJoin(cells, ", "), "]"));
        }
        return absl::StrCat("[", absl::StrJoin(rows, ", "), "]");
      }
      case Kind::kText:
        return absl::StrCat("\"", n.name, "\"");
      case Kind::kChoice:
        return absl::StrCat("(", n.name, ")");
      case Kind::kEllipsis:
        return "...";
    }
    return "?";
  }

  const Expr& e_;
};

}  // namespace

std::string Canonical(const Expr& expr, int node) {
  if (node < 0) return "";
  Printer p(expr);
  return p.Print(node, kLevelRelation);
}

std::string Canonical(const Expr& expr) { return Canonical(expr, expr.root); }

}  // namespace rlvr::math
