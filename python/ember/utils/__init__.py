"""ember.utils: helpers mirroring ``torch.utils`` (dlpack, data, cmake_prefix_path)."""
import os as _os

from . import dlpack  # noqa: F401

#: The directory to put on CMAKE_PREFIX_PATH so that CMake's ``find_package(Ember)`` finds
#: ember's C++ API (``Ember::ember``, ``<ember/script.h>``), as ``torch.utils.cmake_prefix_path``.
cmake_prefix_path = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))),
                                  "share", "cmake")
