/* Topology distance between an RDMA device and what the rank runs on (its GPU
 * when it has one, else its bound CPU set), read from hwloc. */
#ifndef GDR_VERBS_TOPO_H
#define GDR_VERBS_TOPO_H

#include <hwloc.h>

/* Hops in the hwloc tree between the non-I/O ancestor of the OS device named
 * `ibv_name` and the smallest object covering `ref_cpuset`; -1 when either is
 * not in the topology.  `topo` must have been loaded with I/O devices. */
int gdr_verbs_topo_distance(hwloc_topology_t topo, const char *ibv_name,
                            hwloc_const_cpuset_t ref_cpuset);

/* Hops between the PCI device of the OS device `ibv_name` and the PCI device at
 * `pci_busid` ("dddd:bb:dd.f", e.g. a GPU from cuDeviceGetPCIBusId); -1 when either
 * is not in the topology. */
int gdr_verbs_topo_distance_to_pci(hwloc_topology_t topo, const char *ibv_name,
                                   const char *pci_busid);

#endif /* GDR_VERBS_TOPO_H */
