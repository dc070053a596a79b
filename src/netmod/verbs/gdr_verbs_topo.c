#include "gdr_verbs_topo.h"

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

    /* hops = walk both up to their common ancestor */
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
