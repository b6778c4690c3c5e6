# ctest driver: compiles SOURCE with COMPILER and passes only if compilation FAILS and the
# compiler's output matches every regular expression in EXPECT (a ;-list).
separate_arguments(flags UNIX_COMMAND "${FLAGS}")
execute_process(COMMAND ${COMPILER} ${flags} -fsyntax-only ${SOURCE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
    message(FATAL_ERROR "${SOURCE} compiled, but it must not")
endif()
foreach(re IN LISTS EXPECT)
    if(NOT "${out}${err}" MATCHES "${re}")
        message(FATAL_ERROR "the compile error of ${SOURCE} lacks '${re}':\n${out}${err}")
    endif()
endforeach()
message(STATUS "failed to compile as expected, with: ${EXPECT}")
