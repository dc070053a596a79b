/* hwloc distance between a rank and each HCA, on a synthetic two-socket machine:
 *   Package 0 (PUs 0-1) -- PCI bridge -- mlx5_0
 *   Package 1 (PUs 2-3) -- PCI bridge -- mlx5_1 */
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_topo.h"

#define CPU(s) "cpuset=\"" s "\" complete_cpuset=\"" s "\""
#define NODE(s) "nodeset=\"" s "\" complete_nodeset=\"" s "\""

static const char two_socket_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" " CPU("0x0000000f") " allowed_cpuset=\"0x0000000f\" "
    NODE("0x00000003") " allowed_nodeset=\"0x00000003\" gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" " CPU("0x00000003") " " NODE("0x00000001") " gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" " CPU("0x00000003") " " NODE("0x00000001")
    " gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"0\" " CPU("0x00000001") " " NODE("0x00000001") " gp_index=\"4\">\n"
    "    <object type=\"PU\" os_index=\"0\" " CPU("0x00000001") " " NODE("0x00000001") " gp_index=\"5\"/>\n"
    "   </object>\n"
    "   <object type=\"Core\" os_index=\"1\" " CPU("0x00000002") " " NODE("0x00000001") " gp_index=\"6\">\n"
    "    <object type=\"PU\" os_index=\"1\" " CPU("0x00000002") " " NODE("0x00000001") " gp_index=\"7\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"8\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[01-01]\">\n"
    "    <object type=\"PCIDev\" gp_index=\"9\" pci_busid=\"0000:01:00.0\" pci_type=\"0207 [15b3:1017] [15b3:0007] 00\">\n"
    "     <object type=\"OSDev\" gp_index=\"10\" name=\"mlx5_0\" osdev_type=\"3\"/>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    "  <object type=\"Package\" os_index=\"1\" " CPU("0x0000000c") " " NODE("0x00000002") " gp_index=\"11\">\n"
    "   <object type=\"NUMANode\" os_index=\"1\" " CPU("0x0000000c") " " NODE("0x00000002")
    " gp_index=\"12\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"Core\" os_index=\"2\" " CPU("0x00000004") " " NODE("0x00000002") " gp_index=\"13\">\n"
    "    <object type=\"PU\" os_index=\"2\" " CPU("0x00000004") " " NODE("0x00000002") " gp_index=\"14\"/>\n"
    "   </object>\n"
    "   <object type=\"Core\" os_index=\"3\" " CPU("0x00000008") " " NODE("0x00000002") " gp_index=\"15\">\n"
    "    <object type=\"PU\" os_index=\"3\" " CPU("0x00000008") " " NODE("0x00000002") " gp_index=\"16\"/>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"17\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[02-02]\">\n"
    "    <object type=\"PCIDev\" gp_index=\"18\" pci_busid=\"0000:02:00.0\" pci_type=\"0207 [15b3:1017] [15b3:0007] 00\">\n"
    "     <object type=\"OSDev\" gp_index=\"19\" name=\"mlx5_1\" osdev_type=\"3\"/>\n"
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    " </object>\n"
    "</topology>\n";

static int distance_from(hwloc_topology_t topo, const char *dev, unsigned long cpus)
{
    hwloc_bitmap_t set = hwloc_bitmap_alloc();
    hwloc_bitmap_from_ulong(set, cpus);
    int d = gdr_verbs_topo_distance(topo, dev, set);
    hwloc_bitmap_free(set);
    return d;
}

int main(void)
{
    hwloc_topology_t topo;
    int loaded = hwloc_topology_init(&topo) == 0
        && hwloc_topology_set_io_types_filter(topo, HWLOC_TYPE_FILTER_KEEP_ALL) == 0
        && hwloc_topology_set_xmlbuffer(topo, two_socket_xml, (int) sizeof(two_socket_xml)) == 0
        && hwloc_topology_load(topo) == 0;
    GDR_CHECK(loaded, "synthetic two-socket topology loads");
    if (!loaded)
        return gdr_unit_finish();

    GDR_CHECK(distance_from(topo, "mlx5_0", 0x3) == 0, "socket 0 ranks: mlx5_0 is local (0 hops)");
    GDR_CHECK(distance_from(topo, "mlx5_1", 0x3) == 2, "socket 0 ranks: mlx5_1 is 2 hops away");
    GDR_CHECK(distance_from(topo, "mlx5_1", 0xc) == 0, "socket 1 ranks: mlx5_1 is local");
    GDR_CHECK(distance_from(topo, "mlx5_0", 0x4) > distance_from(topo, "mlx5_1", 0x4),
              "a rank bound to PU 2 is closer to mlx5_1 than to mlx5_0");
    GDR_CHECK(distance_from(topo, "mlx5_0", 0x1) == 2, "a rank bound to one PU: 2 hops (PU, core, socket) to its HCA");
    GDR_CHECK(distance_from(topo, "mlx5_0", 0xf) == 1, "an unbound rank (whole machine): 1 hop to either");
    GDR_CHECK(distance_from(topo, "mlx5_7", 0x3) == -1, "unknown device: distance unknown (-1)");
    GDR_CHECK(distance_from(topo, "mlx5_0", 0x0) == -1, "empty CPU set: distance unknown (-1)");
    hwloc_topology_destroy(topo);
    return gdr_unit_finish();
}
