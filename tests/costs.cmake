# How ctest schedules the suite (docs/testing.md). Included at the end of
# each CMakeLists.txt that adds tests (a test's properties can only be set
# where it was added); a name not added there is passed over.
#
# scripts/test runs ctest -j 2 x cores: a slot is half a core, since most
# tests spend their time waiting on sockets and timers. A test that keeps
# a core busy the whole time takes two slots (PROCESSORS 2): the fuzz
# targets (tests/CMakeLists.txt) and the builders below.
#
# COST: ctest starts the costliest tests first. After one run it has its
# own measurements (Testing/Temporary/CTestCostData.txt) and uses those; a
# fresh clone, as CI has, has none, and without these the tests would start
# in the order they were added: install.deb, the longest, nearly last, to
# finish alone long after the rest. The values are seconds, each test's
# time in a full run of scripts/test on a fresh clone of main (2 cores,
# ctest -j2, a load average of 4 to 5 from other work), from the lines
# "Test #N: name ... Passed S sec" of its output. Only their order
# matters; a test under 5 s needs none. The fuzz targets' COST is their
# time (tests/CMakeLists.txt).
set(CSQ_TEST_COSTS
  install.deb 76
  integration.redis.shared 66
  unit.valgrind 56
  install.systemd 52
  fuzz.build 51
  integration.redis.sentinel 39
  integration.redis.robustness 36
  integration.redis.admin_http 32
  integration.journal 31
  integration.admin_http 29
  integration.http 20
  integration.robustness 20
  integration.redis.http 18
  integration.ttl 17
  integration.redis.ttl 17
  examples.frontend_js 15
  examples.redis.frontend_js 15
  integration.reload 13
  integration.redis.reload 13
  integration.redis.clients.redispy 10
  integration.redis.events 10
  unit.test_matcher 10
  integration.events 8
  integration.limits 8
  integration.routing 7
  integration.clients.redispy 7
  examples.agent_python 7
  examples.redis.agent_python 7
  integration.redis.multi 6)

set(_costs ${CSQ_TEST_COSTS})
while(_costs)
  list(POP_FRONT _costs _name _cost)
  if(TEST ${_name})
    set_tests_properties(${_name} PROPERTIES COST ${_cost})
  endif()
endwhile()

# The tests that build the tree once more (a clang build for the fuzz
# targets, a plain one for valgrind, the package, cmake --install): each
# keeps both cores busy while it compiles, so they run one at a time
# (RESOURCE_LOCK) rather than slow each other and every test beside them
# (all four at once, at -j4 on a loaded machine: unit.valgrind 218 s, 56 s
# in the -j2 run above).
set(CSQ_TEST_BUILDERS fuzz.build unit.valgrind install.deb install.systemd)
foreach(_name ${CSQ_TEST_BUILDERS})
  if(TEST ${_name})
    set_tests_properties(${_name} PROPERTIES
      RESOURCE_LOCK csq_build PROCESSORS 2)
  endif()
endforeach()
