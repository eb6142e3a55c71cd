#pragma once
// The headless host's RDMA side (hostsim/rdma_host.h: functions joined by a test wire, verbs-like
// calls written as libmlx5 writes them) for unit tests.
#include "hostsim/rdma_host.h"
#include "testbench/model/resource_fixture.h"
