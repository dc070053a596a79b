/* Device choice: the rule of gdr_verbs_select(), table-driven. */
#include <stdint.h>
#include <string.h>
#include "gdr_unit.h"
#include "verbs/gdr_verbs_select.h"
#include "verbs/gdr_verbs_device.h"

typedef struct {
    const char *what;
    gdr_verbs_candidate_t cands[4];
    size_t n;
    const char *wanted;
    int expect;                 /* index, or -1 */
    const char *why_has;        /* substring of the reason when expect == -1 */
} select_case_t;

static const select_case_t cases[] = {
    {"no device at all", {{"", 0, 0}}, 0, NULL, -1, "no RDMA device"},
    {"single active device", {{"rxe0", 1, -1}}, 1, NULL, 0, NULL},
    {"closest by hwloc distance wins",
     {{"mlx5_0", 1, 4}, {"mlx5_1", 1, 2}, {"mlx5_2", 1, 6}}, 3, NULL, 1, NULL},
    {"known distance beats unknown", {{"a", 1, -1}, {"b", 1, 7}}, 2, NULL, 1, NULL},
    {"ties broken by name", {{"mlx5_3", 1, 2}, {"mlx5_1", 1, 2}}, 2, NULL, 1, NULL},
    {"inactive ports skipped even if closer", {{"near", 0, 0}, {"far", 1, 9}}, 2, NULL, 1, NULL},
    {"all ports down", {{"x", 0, 1}, {"y", 0, 2}}, 2, NULL, -1, "ACTIVE"},
    {"CVAR names a far device", {{"mlx5_0", 1, 0}, {"mlx5_1", 1, 8}}, 2, "mlx5_1", 1, NULL},
    {"CVAR names a missing device", {{"mlx5_0", 1, 0}}, 1, "mlx5_9", -1,
     "MPIR_CVAR_CH4_GDR_DEVICE"},
    {"CVAR names a device that is down", {{"mlx5_0", 0, 0}}, 1, "mlx5_0", -1, "ACTIVE"},
    {"empty CVAR means automatic", {{"a", 1, 3}, {"b", 1, 1}}, 2, "", 1, NULL},
};

int main(void)
{
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const select_case_t *c = &cases[i];
        const char *why = NULL;
        int got = gdr_verbs_select(c->cands, c->n, c->wanted, &why);
        GDR_CHECK(got == c->expect, "select: %s (got %d, expected %d)", c->what, got, c->expect);
        if (c->expect < 0)
            GDR_CHECK(why != NULL && strstr(why, c->why_has) != NULL,
                      "select: %s: reason names '%s' (\"%s\")", c->what, c->why_has,
                      why ? why : "(null)");
        else
            GDR_CHECK(why == NULL, "select: %s: no reason on success", c->what);
    }

    /* the doorbell policy's input: which providers ring by a system call */
    static const struct {
        uint32_t vendor;
        int syscall;
        const char *what;
    } bells[] = {
        {0xffffff, 1, "Soft-RoCE (rxe)"},
        {0x626d74, 1, "soft iWARP (siw)"},
        {0x02c9, 0, "Mellanox/NVIDIA ConnectX (mlx5)"},
        {0x1077, 0, "QLogic/Cavium (qedr)"},
        {0x14e4, 0, "Broadcom (bnxt_re)"},
        {0x8086, 0, "Intel (irdma)"},
        {0x1d0f, 0, "Amazon (efa)"},
        {0, 0, "vendor 0"},
    };
    for (size_t i = 0; i < sizeof(bells) / sizeof(bells[0]); i++)
        GDR_CHECK(gdr_verbs_doorbell_is_syscall(bells[i].vendor) == bells[i].syscall,
                  "doorbell of %s (vendor 0x%x): %s", bells[i].what, (unsigned) bells[i].vendor,
                  bells[i].syscall ? "a system call" : "an MMIO store");
    return gdr_unit_finish();
}
