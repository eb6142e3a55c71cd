# The bridge into the SystemC kernel: kernel queues and the per-function vfio-user backend.
# (Kept apart from qemu-bridge/CMakeLists.txt, which builds the protocol library alone.)
set(_bridge_dir ${PROJECT_SOURCE_DIR}/qemu-bridge)
add_library(hcaemu_bridge STATIC
  ${_bridge_dir}/kernel_queue.cpp
  ${_bridge_dir}/dma_reply_waiter.cpp
  ${_bridge_dir}/function_backend.cpp)
target_link_libraries(hcaemu_bridge PUBLIC hcaemu_vfio_user hcaemu_sriov)
install(PROGRAMS ${_bridge_dir}/scripts/provide-qemu.sh ${_bridge_dir}/scripts/build-guest-image.sh
        DESTINATION ${CMAKE_INSTALL_DATADIR}/hcaemu/scripts)

# The uplink as hcaemu runs it (socket, faults, port pcap) and the control commands acting on it.
add_library(hcaemu_uplink_port STATIC
  ${_bridge_dir}/uplink_port.cpp
  ${_bridge_dir}/control_commands.cpp)
target_link_libraries(hcaemu_uplink_port PUBLIC hcaemu_bridge hcaemu_netdev_link hcaemu_fabric hcaemu_traces
                      hcaemu_control_server)
