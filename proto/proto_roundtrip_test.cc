// Round-trips every message of the rlvr.v1 protocol: each field (and each
// oneof member, one at a time) is set to a non-default value through protobuf
// reflection, serialized, parsed back and compared.
#include <google/protobuf/descriptor.h>
#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <regex>

#include "rlvr/v1/rollout.pb.h"
#include "rlvr/v1/session.pb.h"
#include "rlvr/v1/status.pb.h"
#include "rlvr/v1/weights.pb.h"

namespace rlvr {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

// Sets `field` of `msg` to a value that depends on `seed`.
void SetField(Message* msg, const FieldDescriptor* f, int seed, int depth);

void Fill(Message* msg, int seed, int depth, const FieldDescriptor* only_oneof_member) {
  const Descriptor* d = msg->GetDescriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->containing_oneof() != nullptr && f != only_oneof_member &&
        !(only_oneof_member == nullptr && f->index_in_oneof() == 0)) {
      continue;
    }
    SetField(msg, f, seed + i, depth);
  }
}

void SetField(Message* msg, const FieldDescriptor* f, int seed, int depth) {
  const Reflection* r = msg->GetReflection();
  int reps = f->is_repeated() ? 3 : 1;
  for (int k = 0; k < reps; ++k) {
    int v = seed * 7 + k + 1;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        f->is_repeated() ? r->AddInt32(msg, f, -v) : r->SetInt32(msg, f, -v);
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        f->is_repeated() ? r->AddInt64(msg, f, -v * 1000000007LL)
                         : r->SetInt64(msg, f, -v * 1000000007LL);
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        f->is_repeated() ? r->AddUInt32(msg, f, v) : r->SetUInt32(msg, f, 0xF0000000u + v);
        break;
      case FieldDescriptor::CPPTYPE_UINT64:
        f->is_repeated() ? r->AddUInt64(msg, f, v) : r->SetUInt64(msg, f, (1ULL << 60) + v);
        break;
      case FieldDescriptor::CPPTYPE_FLOAT:
        f->is_repeated() ? r->AddFloat(msg, f, -0.25f * v) : r->SetFloat(msg, f, -0.25f * v);
        break;
      case FieldDescriptor::CPPTYPE_DOUBLE:
        f->is_repeated() ? r->AddDouble(msg, f, 1.0 / v) : r->SetDouble(msg, f, 1.0 / v);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        f->is_repeated() ? r->AddBool(msg, f, true) : r->SetBool(msg, f, true);
        break;
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* e = f->enum_type();
        const auto* val = e->value(e->value_count() - 1 - (k % e->value_count()));
        f->is_repeated() ? r->AddEnum(msg, f, val) : r->SetEnum(msg, f, val);
        break;
      }
      case FieldDescriptor::CPPTYPE_STRING: {
        std::string s = "v" + std::to_string(v) + " \xc3\xa9";  // Valid UTF-8 (proto3 checks).
        f->is_repeated() ? r->AddString(msg, f, s) : r->SetString(msg, f, s);
        break;
      }
      case FieldDescriptor::CPPTYPE_MESSAGE: {
        if (depth > 4) break;
        Message* sub = f->is_repeated() ? r->AddMessage(msg, f) : r->MutableMessage(msg, f);
        Fill(sub, seed + k, depth + 1, nullptr);
        break;
      }
    }
  }
}

void ExpectRoundTrip(const Message& original) {
  std::string wire;
  ASSERT_TRUE(original.SerializeToString(&wire));
  std::unique_ptr<Message> parsed(original.New());
  ASSERT_TRUE(parsed->ParseFromString(wire));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(original, *parsed))
      << original.GetTypeName();
}

void RoundTripAllMessagesOf(const FileDescriptor* file, int* count) {
  auto* factory = google::protobuf::MessageFactory::generated_factory();
  for (int i = 0; i < file->message_type_count(); ++i) {
    const Descriptor* d = file->message_type(i);
    std::unique_ptr<Message> msg(factory->GetPrototype(d)->New());
    ExpectRoundTrip(*msg);  // Empty message.
    Fill(msg.get(), i + 1, 0, nullptr);
    ExpectRoundTrip(*msg);
    // Each oneof member on its own.
    for (int o = 0; o < d->oneof_decl_count(); ++o) {
      for (int m = 0; m < d->oneof_decl(o)->field_count(); ++m) {
        std::unique_ptr<Message> one(factory->GetPrototype(d)->New());
        Fill(one.get(), i + m + 1, 0, d->oneof_decl(o)->field(m));
        ExpectRoundTrip(*one);
      }
    }
    ++*count;
  }
}

TEST(ProtoRoundTripTest, EveryV1MessageSurvivesSerialization) {
  int count = 0;
  RoundTripAllMessagesOf(rlvr::v1::RolloutGroup::descriptor()->file(), &count);
  RoundTripAllMessagesOf(rlvr::v1::ActorMessage::descriptor()->file(), &count);
  RoundTripAllMessagesOf(rlvr::v1::WeightChunk::descriptor()->file(), &count);
  RoundTripAllMessagesOf(rlvr::v1::LearnerStatus::descriptor()->file(), &count);
  EXPECT_EQ(count, 19);  // Every message type of the four files.
}

// Every message and field of the v1 .proto files carries a comment on the line
// above it (or at the end of its line); oneof members, whose type says it all,
// are exempt.
TEST(ProtoRoundTripTest, EveryMessageAndFieldIsDocumented) {
  const char* src = std::getenv("RLVR_SOURCE_DIR");
  ASSERT_NE(src, nullptr);
  const std::regex field_re(R"(^\s*(repeated\s+)?[\w.]+\s+\w+\s*=\s*\d+;)");
  const std::regex message_re(R"(^\s*(message|enum|service)\s+\w+)");
  int checked = 0;
  for (const char* name : {"rollout", "session", "weights", "status"}) {
    std::string path = std::string(src) + "/proto/rlvr/v1/" + name + ".proto";
    std::ifstream in(path);
    ASSERT_TRUE(in.good()) << path;
    std::string line, prev;
    int oneof_depth = 0, lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.find("oneof ") != std::string::npos) oneof_depth = 1;
      bool documented =
          prev.find("//") != std::string::npos || line.find("//") != std::string::npos;
      if (oneof_depth == 0 &&
          (std::regex_search(line, field_re) || std::regex_search(line, message_re))) {
        EXPECT_TRUE(documented) << path << ":" << lineno << ": undocumented: " << line;
        ++checked;
      }
      if (oneof_depth && line.find('}') != std::string::npos) oneof_depth = 0;
      if (!line.empty()) prev = line;
    }
  }
  EXPECT_GT(checked, 60);
}

}  // namespace
}  // namespace rlvr
