# Included from tests/trainer/CMakeLists.txt: closed-loop tests (checkpoints, export,
# validation, faults). One executable links LibTorch once; the fault scripts run real processes.
add_executable(trainer_loop_tests
  checkpoint_test.cpp
  export_test.cpp
  initial_load_test.cpp
  tensor_parallel_test.cpp)
target_link_libraries(trainer_loop_tests PRIVATE shardcast_trainer_ckpt GTest::gtest_main)
target_compile_options(trainer_loop_tests PRIVATE -Wno-unused-parameter)
target_precompile_headers(trainer_loop_tests REUSE_FROM shardcast_trainer)
gtest_discover_tests(trainer_loop_tests
  DISCOVERY_TIMEOUT 60
  PROPERTIES ENVIRONMENT "SHARDCAST_CONFIG_DIR=${PROJECT_SOURCE_DIR}/configs" TIMEOUT 300)

# Fault tests with real processes (fault_lib.sh); exit 77 = skipped (no user namespaces).
foreach(fault rank_killed kill_during_save disk_full bad_input launcher_killed bad_env restart_finished
        corrupt_fallback async_save_killed)
  add_test(NAME fault_${fault}
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/fault_${fault}.sh $<TARGET_FILE:shardcast-train>)
  set_tests_properties(fault_${fault} PROPERTIES TIMEOUT 180 SKIP_RETURN_CODE 77
    ENVIRONMENT "SHARDCAST_CONFIG_DIR=${PROJECT_SOURCE_DIR}/configs")
endforeach()
