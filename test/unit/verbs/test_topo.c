/* hwloc distance between a rank and each HCA, on a synthetic two-socket machine:
 *   Package 0 (PUs 0-1) -- PCI bridge -- mlx5_0
 *   Package 1 (PUs 2-3) -- PCI bridge -- mlx5_1 */
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_select.h"
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

/* One socket, two PCI switches, each with a GPU and an HCA:
 *   switch A: GPU 0000:11:00.0, mlx5_0 on 0000:12:00.0
 *   switch B: GPU 0000:21:00.0, mlx5_1 on 0000:22:00.0 */
#define PCIDEV(gp, bus, cls, inner) \
    "     <object type=\"PCIDev\" gp_index=\"" gp "\" pci_busid=\"0000:" bus ":00.0\" pci_type=\"" cls \
    " [10de:2330] [10de:16c1] a1\">" inner "</object>\n"
static const char two_switch_xml[] =
    "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
    "<!DOCTYPE topology SYSTEM \"hwloc2.dtd\">\n"
    "<topology version=\"2.0\">\n"
    " <object type=\"Machine\" os_index=\"0\" " CPU("0x00000001") " allowed_cpuset=\"0x00000001\" "
    NODE("0x00000001") " allowed_nodeset=\"0x00000001\" gp_index=\"1\">\n"
    "  <object type=\"Package\" os_index=\"0\" " CPU("0x00000001") " " NODE("0x00000001") " gp_index=\"2\">\n"
    "   <object type=\"NUMANode\" os_index=\"0\" " CPU("0x00000001") " " NODE("0x00000001")
    " gp_index=\"3\" local_memory=\"1073741824\"/>\n"
    "   <object type=\"PU\" os_index=\"0\" " CPU("0x00000001") " " NODE("0x00000001") " gp_index=\"4\"/>\n"
    "   <object type=\"Bridge\" gp_index=\"5\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[10-12]\">\n"
    "    <object type=\"Bridge\" gp_index=\"6\" pci_busid=\"0000:10:00.0\" pci_type=\"0604 [1000:c010] [1000:a064] b0\""
    " bridge_type=\"1-1\" depth=\"1\" bridge_pci=\"0000:[11-12]\">\n"
    PCIDEV("7", "11", "0302", "")
    PCIDEV("8", "12", "0207", "<object type=\"OSDev\" gp_index=\"9\" name=\"mlx5_0\" osdev_type=\"3\"/>")
    "    </object>\n"
    "   </object>\n"
    "   <object type=\"Bridge\" gp_index=\"10\" bridge_type=\"0-1\" depth=\"0\" bridge_pci=\"0000:[20-22]\">\n"
    "    <object type=\"Bridge\" gp_index=\"11\" pci_busid=\"0000:20:00.0\" pci_type=\"0604 [1000:c010] [1000:a064] b0\""
    " bridge_type=\"1-1\" depth=\"1\" bridge_pci=\"0000:[21-22]\">\n"
    PCIDEV("12", "21", "0302", "")
    PCIDEV("13", "22", "0207", "<object type=\"OSDev\" gp_index=\"14\" name=\"mlx5_1\" osdev_type=\"3\"/>")
    "    </object>\n"
    "   </object>\n"
    "  </object>\n"
    " </object>\n"
    "</topology>\n";

static int load(hwloc_topology_t *topo, const char *xml, size_t len)
{
    return hwloc_topology_init(topo) == 0
        && hwloc_topology_set_io_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_ALL) == 0
        && hwloc_topology_set_xmlbuffer(*topo, xml, (int) len) == 0
        && hwloc_topology_load(*topo) == 0;
}

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
    int loaded = load(&topo, two_socket_xml, sizeof(two_socket_xml));
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

    loaded = load(&topo, two_switch_xml, sizeof(two_switch_xml));
    GDR_CHECK(loaded, "synthetic two-switch topology (GPU + HCA under each switch) loads");
    if (!loaded)
        return gdr_unit_finish();
    int g0n0 = gdr_verbs_topo_distance_to_pci(topo, "mlx5_0", "0000:11:00.0");
    int g0n1 = gdr_verbs_topo_distance_to_pci(topo, "mlx5_1", "0000:11:00.0");
    int g1n0 = gdr_verbs_topo_distance_to_pci(topo, "mlx5_0", "0000:21:00.0");
    int g1n1 = gdr_verbs_topo_distance_to_pci(topo, "mlx5_1", "0000:21:00.0");
    GDR_CHECK(g0n0 == 2, "GPU under switch A: mlx5_0 beside it, 2 hops (%d)", g0n0);
    GDR_CHECK(g0n1 > g0n0, "GPU under switch A: mlx5_1 under the other switch is farther (%d)", g0n1);
    GDR_CHECK(g1n1 == 2 && g1n0 > g1n1, "GPU under switch B: mlx5_1 is nearest (%d vs %d)", g1n1, g1n0);
    GDR_CHECK(gdr_verbs_topo_distance_to_pci(topo, "mlx5_0", "0000:99:00.0") == -1,
              "a GPU bus id not in the topology: unknown (-1)");
    GDR_CHECK(gdr_verbs_topo_distance_to_pci(topo, "mlx5_0", "garbage") == -1,
              "a malformed bus id: unknown (-1)");
    /* the rule picks the HCA beside the rank's GPU, even against name order */
    gdr_verbs_candidate_t c[2] = { {"mlx5_0", 1, g1n0}, {"mlx5_1", 1, g1n1} };
    const char *why;
    GDR_CHECK(gdr_verbs_select(c, 2, NULL, &why) == 1, "a rank on GPU 0000:21:00.0 uses mlx5_1");
    hwloc_topology_destroy(topo);
    return gdr_unit_finish();
}
