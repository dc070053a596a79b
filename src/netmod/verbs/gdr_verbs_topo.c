#include "gdr_verbs_topo.h"

#include <stdio.h>
#include <string.h>

static hwloc_obj_t find_osdev(hwloc_topology_t topo, const char *name)
{
    hwloc_obj_t obj = NULL;
    while ((obj = hwloc_get_next_osdev(topo, obj)) != NULL) {
        if (obj->name != NULL && strcmp(obj->name, name) == 0)
            return obj;
    }
    return NULL;
}

static unsigned depth_of(hwloc_obj_t obj)
{
    unsigned d = 0;
    while (obj->parent != NULL) {
        obj = obj->parent;
        d++;
    }
    return d;
}

/* Hops between two objects: both walk up to their common ancestor. */
static int hops_between(hwloc_obj_t a, hwloc_obj_t b)
{
    unsigned da = depth_of(a), db = depth_of(b);
    int hops = 0;
    while (da > db) {
        a = a->parent;
        da--;
        hops++;
    }
    while (db > da) {
        b = b->parent;
        db--;
        hops++;
    }
    while (a != b) {
        a = a->parent;
        b = b->parent;
        hops += 2;
    }
    return hops;
}

int gdr_verbs_topo_distance(hwloc_topology_t topo, const char *ibv_name,
                            hwloc_const_cpuset_t ref_cpuset)
{
    hwloc_obj_t nic = find_osdev(topo, ibv_name);
    if (nic == NULL || ref_cpuset == NULL || hwloc_bitmap_iszero(ref_cpuset))
        return -1;
    hwloc_obj_t a = hwloc_get_non_io_ancestor_obj(topo, nic);
    hwloc_obj_t b = hwloc_get_obj_covering_cpuset(topo, ref_cpuset);
    if (a == NULL || b == NULL)
        return -1;
    return hops_between(a, b);
}

int gdr_verbs_topo_distance_to_pci(hwloc_topology_t topo, const char *ibv_name,
                                   const char *pci_busid)
{
    unsigned domain, bus, dev, func;
    hwloc_obj_t nic = find_osdev(topo, ibv_name);
    if (nic == NULL || pci_busid == NULL
        || sscanf(pci_busid, "%x:%x:%x.%x", &domain, &bus, &dev, &func) != 4)
        return -1;
    hwloc_obj_t pci = hwloc_get_pcidev_by_busid(topo, domain, bus, dev, func);
    hwloc_obj_t nic_pci = nic->parent;
    if (pci == NULL || nic_pci == NULL)
        return -1;
    return hops_between(nic_pci, pci);
}
