// ember.jit from C++ with no Python in the process: building a module, saving it as an
// archive, loading it through <ember/script.h> and running it; and an archive written by a
// Python test (EMBER_JIT_ARCHIVE, see tests/test_jit_cpp.py).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "ember/jit/archive.h"
#include "ember/jit/interpreter.h"
#include "ember/jit/ir.h"
#include "ember/jit/operator.h"
#include "ember/jit/passes.h"
#include "ember/script.h"
#include "helpers.h"

using ember::DType;
using ember::ErrorKind;
using ember::Tensor;
using ember_test::raises;
namespace jit = ember::jit;

namespace {

std::string temp_path(const char* name) {
  const char* dir = std::getenv("TMPDIR");
  return std::string(dir ? dir : "/tmp") + "/ember_jit_" + name + "_" +
         std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + ".pt";
}

// forward(self, x) = relu(x @ self.weight^T + self.bias), built node by node.
std::shared_ptr<jit::Object> tiny_module(const Tensor& weight, const Tensor& bias) {
  auto cls = std::make_shared<jit::ClassType>();
  cls->name = "__ember__.Tiny";
  cls->add_attr("weight", jit::Type::tensor(), true, false);
  cls->add_attr("bias", jit::Type::tensor(), true, false);
  auto g = std::make_shared<jit::Graph>();
  jit::Value* self = g->add_input(jit::Type::object(cls->name), "self");
  jit::Value* x = g->add_input(jit::Type::tensor(), "x");
  auto getattr = [&](const char* name) {
    jit::Node* n = g->create("prim::GetAttr", 1);
    n->set_attr("name", jit::IValue(std::string(name)));
    n->add_input(self);
    g->insert(n);
    n->output()->type = jit::Type::tensor();
    return n->output();
  };
  jit::Node* lin = g->create_op(jit::get_operator("aten::linear"));
  lin->add_input(x);
  lin->add_input(getattr("weight"));
  lin->add_input(getattr("bias"));
  g->insert(lin);
  jit::Node* relu = g->create_op(jit::get_operator("aten::relu"));
  relu->add_input(lin->output());
  g->insert(relu);
  g->register_output(relu->output());
  g->lint();
  auto fn = std::make_shared<jit::Function>();
  fn->name = "forward";
  fn->graph = g;
  cls->methods["forward"] = fn;
  auto obj = std::make_shared<jit::Object>();
  obj->type = cls;
  obj->slots = {jit::IValue(weight), jit::IValue(bias)};
  obj->original_name = "Tiny";
  return obj;
}

bool same(const Tensor& a, const Tensor& b) {
  if (a.sizes() != b.sizes() || a.dtype() != b.dtype()) return false;
  Tensor ca = a.contiguous(), cb = b.contiguous();
  for (int64_t i = 0; i < ca.numel(); ++i)
    if (ca.data<float>()[i] != cb.data<float>()[i]) return false;
  return true;
}

}  // namespace

TEST(Jit, RegistryHasNoSchemaErrors) {
  auto errors = jit::registration_errors();
  std::string all;
  for (auto& e : errors) all += e + "\n";
  EXPECT_TRUE(errors.empty()) << all;
  EXPECT_NE(jit::find_operator("aten::linear"), nullptr);
  EXPECT_NE(jit::find_operator("aten::add.Tensor"), nullptr);
}

TEST(Jit, SaveLoadRunWithoutPython) {
  ember::manual_seed(0);
  Tensor w = ember::randn({3, 4});
  Tensor b = ember::randn({3});
  auto obj = tiny_module(w, b);
  std::string path = temp_path("tiny");
  jit::save_module(obj, path);

  ember::jit::script::Module m = ember::jit::load(path);
  Tensor x = ember::randn({2, 4});
  std::vector<jit::IValue> inputs{x};
  Tensor got = m.forward(inputs).toTensor();
  Tensor want = ember::unary(ember::UnaryOp::relu, ember::linear(x, w, b));
  EXPECT_TRUE(same(got, want));
  EXPECT_EQ(m.named_parameters().size(), 2u);
  EXPECT_EQ(m.named_parameters()[0].first, "weight");
  // Printing follows Python's repr.
  std::ostringstream os;
  os << ember::ones({2});
  EXPECT_EQ(os.str(), "tensor([1., 1.])");
  std::remove(path.c_str());
}

TEST(Jit, NoGradGuardAndSlice) {
  auto obj = tiny_module(ember::ones({3, 4}), ember::zeros({3}));
  jit::Module m(obj);
  Tensor out;
  {
    ember::NoGradGuard no_grad;
    out = m.forward({ember::ones({1, 4})}).toTensor();
  }
  EXPECT_FALSE(out.requires_grad());
  std::ostringstream os;
  os << out.slice(/*dim=*/1, /*start=*/0, /*end=*/2);
  EXPECT_EQ(os.str(), "tensor([[4., 4.]])");
}

TEST(Jit, CorruptArchiveIsRefused) {
  auto obj = tiny_module(ember::ones({3, 4}), ember::zeros({3}));
  std::string path = temp_path("corrupt");
  jit::save_module(obj, path);
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    bytes = ss.str();
  }
  bytes[bytes.size() - 3] ^= 0x5a;  // one weight byte
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), std::streamsize(bytes.size()));
  }
  EXPECT_TRUE(raises([&] { ember::jit::load(path); }, ErrorKind::Runtime, "checksum"));
  {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write("\x10\0\0\0\0\0\0\0{}", 10);
  }
  EXPECT_TRUE(raises([&] { ember::jit::load(path); }, ErrorKind::Runtime, "header"));
  EXPECT_TRUE(
      raises([&] { ember::jit::load(path + ".missing"); }, ErrorKind::Runtime, "cannot open"));
  std::remove(path.c_str());
}

TEST(Jit, PassesKeepMeaning) {
  // relu(x * 1.0) twice: CSE merges the duplicate, DCE drops the unused one.
  auto g = std::make_shared<jit::Graph>();
  jit::Value* x = g->add_input(jit::Type::tensor(), "x");
  auto mul = [&] {
    jit::Node* n = g->create_op(jit::get_operator("aten::mul.Tensor"));
    n->add_input(x);
    n->add_input(x);
    g->insert(n);
    return n->output();
  };
  jit::Value* a = mul();
  jit::Value* b = mul();
  mul();  // unused
  jit::Node* add = g->create_op(jit::get_operator("aten::add.Tensor"));
  add->add_input(a);
  add->add_input(b);
  g->insert(add);
  g->register_output(add->output());
  jit::optimize(*g);
  int muls = 0;
  for (jit::Node* n : *g->block()) muls += n->kind == "aten::mul";
  EXPECT_EQ(muls, 1);
  auto code = jit::compile(g);
  Tensor in = ember::full({3}, ember::Scalar(2.0));
  auto out = jit::run(*code, {jit::IValue(in)});
  EXPECT_TRUE(same(out[0].toTensor(), ember::full({3}, ember::Scalar(8.0))));
}

// tests/test_jit_cpp.py sets EMBER_JIT_ARCHIVE to a module Python traced, with
// EMBER_JIT_INPUT_SHAPE ("1,3,8,8") and EMBER_JIT_EXPECT (its output's repr in Python).
TEST(Jit, ArchiveFromPython) {
  const char* path = std::getenv("EMBER_JIT_ARCHIVE");
  if (!path) GTEST_SKIP() << "EMBER_JIT_ARCHIVE not set (tests/test_jit_cpp.py sets it)";
  ember::jit::Module m = ember::jit::load(path);
  std::vector<int64_t> shape;
  std::stringstream ss(std::getenv("EMBER_JIT_INPUT_SHAPE"));
  for (std::string tok; std::getline(ss, tok, ',');) shape.push_back(std::stoll(tok));
  m.eval();
  ember::NoGradGuard no_grad;
  Tensor out = m.forward({ember::ones(ember::Shape(shape.begin(), shape.end()))}).toTensor();
  EXPECT_EQ(out.str(), std::string(std::getenv("EMBER_JIT_EXPECT")));
}
