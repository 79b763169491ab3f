// The oneDNN convolution engine (Note [oneDNN convolution] in conv_onednn.cpp): its
// kernels fill conv_engine_fwd_stub / conv_engine_bwd_stub where libdnnl loads.
#pragma once
#include <cstdint>

namespace ember::cpu {

/// How many forward and backward calls oneDNN has taken since startup (0 without it):
/// the tests check which passes it takes.
int64_t onednn_conv_calls();

}  // namespace ember::cpu
