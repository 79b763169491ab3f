# cmake -DREADELF=<readelf> -DFILE=<shared object> -P check_libstdcxx.cmake
# Fails unless FILE lists the shared libstdc++ as NEEDED (Note [One libstdc++]
# in CMakeLists.txt): a libstdc++ linked in statically is a second C++ runtime.
execute_process(COMMAND ${READELF} -d ${FILE} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ember: '${READELF} -d ${FILE}' failed")
endif()
if(NOT out MATCHES "NEEDED[^\n]*\\[libstdc\\+\\+\\.so\\.6\\]")
  message(FATAL_ERROR "ember: ${FILE} does not link the shared libstdc++ (no NEEDED "
                      "libstdc++.so.6): libstdc++ was linked statically. See Note [One libstdc++].")
endif()
