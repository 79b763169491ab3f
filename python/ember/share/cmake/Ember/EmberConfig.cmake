# find_package(Ember): ember's C++ API for programs that load ember.jit archives.
#
# Note [C++ package]
# This file ships inside the Python package (ember/share/cmake/Ember, found through
# `-DCMAKE_PREFIX_PATH=$(python -c "import ember.utils; print(ember.utils.cmake_prefix_path)")`,
# as PyTorch's torch.utils.cmake_prefix_path). It defines the imported target Ember::ember:
# libember_core.so (the tensors, ops, autograd and the jit runtime), the headers
# (<ember/script.h>, installed under ember/include; in a source checkout the csrc/ and
# include/ directories beside python/ember), C++17, and the scipy-openblas32 library that
# ember's Python package loads before the core: linked here, its symbols are found the
# same way in a program without Python.
#
# Sets Ember_FOUND, EMBER_INCLUDE_DIRS, EMBER_LIBRARIES (also TORCH-style spellings
# Ember_INCLUDE_DIRS / Ember_LIBRARIES).
get_filename_component(_ember_root "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(EXISTS "${_ember_root}/include/ember/script.h")
  set(_ember_include "${_ember_root}/include")
elseif(EXISTS "${_ember_root}/../../include/ember/script.h" AND EXISTS "${_ember_root}/../../csrc/ember")
  get_filename_component(_ember_src "${_ember_root}/../.." ABSOLUTE)
  set(_ember_include "${_ember_src}/csrc;${_ember_src}/include")
else()
  set(Ember_FOUND FALSE)
  set(Ember_NOT_FOUND_MESSAGE "ember's C++ headers were not found under ${_ember_root}/include")
  return()
endif()

find_library(EMBER_CORE_LIBRARY NAMES ember_core PATHS "${_ember_root}" NO_DEFAULT_PATH)
if(NOT EMBER_CORE_LIBRARY)
  set(Ember_FOUND FALSE)
  set(Ember_NOT_FOUND_MESSAGE "libember_core.so was not found in ${_ember_root}")
  return()
endif()

# The BLAS ember calls (see _blas.py): the scipy-openblas32 wheel next to ember.
set(_ember_blas "")
foreach(_dir "${_ember_root}/../scipy_openblas32/lib" "${_ember_root}/../../scipy_openblas32/lib")
  if(EXISTS "${_dir}/libscipy_openblas.so")
    get_filename_component(_ember_blas "${_dir}/libscipy_openblas.so" ABSOLUTE)
    break()
  endif()
endforeach()
if(NOT _ember_blas)
  execute_process(COMMAND python3 -c "import scipy_openblas32 as s, os; print(os.path.join(s.get_lib_dir(), 'libscipy_openblas.so'))"
                  OUTPUT_VARIABLE _ember_blas OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(NOT EXISTS "${_ember_blas}")
    set(_ember_blas "")
  endif()
endif()

find_package(Threads REQUIRED)
if(NOT TARGET Ember::ember)
  add_library(Ember::ember SHARED IMPORTED)
  set(_ember_link Threads::Threads ${CMAKE_DL_LIBS})
  if(_ember_blas)
    # Nothing in a program references the BLAS's symbols directly (the core finds them with
    # dlsym), so a linker that drops unused libraries (--as-needed, Debian/Ubuntu's default)
    # would leave it out and the core would run its fallback GEMM: keep it needed.
    list(PREPEND _ember_link "-Wl,--no-as-needed" "${_ember_blas}" "-Wl,--as-needed")
  endif()
  set_target_properties(Ember::ember PROPERTIES
    IMPORTED_LOCATION "${EMBER_CORE_LIBRARY}"
    INTERFACE_INCLUDE_DIRECTORIES "${_ember_include}"
    INTERFACE_COMPILE_FEATURES cxx_std_17
    INTERFACE_LINK_LIBRARIES "${_ember_link}")
endif()

set(Ember_FOUND TRUE)
set(EMBER_INCLUDE_DIRS ${_ember_include})
set(EMBER_LIBRARIES Ember::ember)
set(Ember_INCLUDE_DIRS ${EMBER_INCLUDE_DIRS})
set(Ember_LIBRARIES ${EMBER_LIBRARIES})
