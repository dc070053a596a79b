#include "gdr_verbs_qp.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* 6 retransmissions of the caller's timer (gdr_verbs_qp_connect).  Not 7: Soft-RoCE
 * (Linux 6.1 rxe) then retries forever, as for RNR (measured). */
#define QP_RETRY_CNT 6
#define QP_RNR_RETRY 7          /* credits prevent RNR; infinite retry never spins on it */
#define QP_MIN_RNR_TIMER 12

static void fill_ah(const gdr_verbs_device_t *dev, const gdr_verbs_card_t *card,
                    struct ibv_ah_attr *ah);

static uint32_t psn_of(uint32_t qpn)
{
    return qpn & 0xffffff;
}

struct ibv_qp *gdr_verbs_qp_create(gdr_verbs_device_t *dev, struct ibv_cq *cq,
                                   struct ibv_srq *srq, gdr_verbs_qp_caps_t *caps,
                                   char *why, size_t why_len)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    struct ibv_qp *qp;

    memset(&init, 0, sizeof(init));
    init.send_cq = cq;
    init.recv_cq = cq;
    init.srq = srq;
    init.qp_type = IBV_QPT_RC;
    init.cap.max_send_wr = caps->max_send_wr;
    init.cap.max_recv_wr = srq != NULL ? 0 : caps->max_recv_wr;
    uint32_t sge = caps->max_send_sge ? caps->max_send_sge : 1;
    if (dev->attr.max_sge > 0 && sge > (uint32_t) dev->attr.max_sge)
        sge = (uint32_t) dev->attr.max_sge;
    init.cap.max_send_sge = sge;
    init.cap.max_recv_sge = srq != NULL ? 0 : 1;
    init.cap.max_inline_data = caps->max_inline;
    qp = ibv_create_qp(dev->pd, &init);
    if (qp == NULL && caps->max_inline > 0) {
        init.cap.max_inline_data = 0;   /* some providers refuse inline sizes */
        qp = ibv_create_qp(dev->pd, &init);
    }
    if (qp == NULL) {
        snprintf(why, why_len, "ibv_create_qp(%s, %u send / %u recv WRs) failed: %s "
                 "(too many peers for the device's QP limits?)", dev->name,
                 caps->max_send_wr, caps->max_recv_wr, strerror(errno));
        return NULL;
    }
    caps->max_inline = init.cap.max_inline_data;
    caps->max_send_sge = init.cap.max_send_sge < sge ? init.cap.max_send_sge : sge;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = dev->port_num;
    attr.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
        IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
                      IBV_QP_ACCESS_FLAGS) != 0) {
        snprintf(why, why_len, "%s: QP %u to INIT failed: %s", dev->name, qp->qp_num,
                 strerror(errno));
        ibv_destroy_qp(qp);
        return NULL;
    }
    return qp;
}

int gdr_verbs_qp_connect(struct ibv_qp *qp, const gdr_verbs_device_t *dev,
                         const gdr_verbs_card_t *card, uint32_t remote_qpn,
                         uint8_t timeout, char *why, size_t why_len)
{
    struct ibv_qp_attr attr;
    uint8_t rd_atom = dev->attr.max_qp_rd_atom < 16 ? (uint8_t) dev->attr.max_qp_rd_atom : 16;
    uint8_t init_rd_atom = dev->attr.max_qp_init_rd_atom < 16 ?
        (uint8_t) dev->attr.max_qp_init_rd_atom : 16;

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    attr.path_mtu = dev->active_mtu < (enum ibv_mtu) card->mtu ? dev->active_mtu
        : (enum ibv_mtu) card->mtu;
    attr.dest_qp_num = remote_qpn;
    attr.rq_psn = psn_of(remote_qpn);
    attr.max_dest_rd_atomic = rd_atom;
    attr.min_rnr_timer = QP_MIN_RNR_TIMER;
    fill_ah(dev, card, &attr.ah_attr);
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
                      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER) != 0) {
        snprintf(why, why_len, "%s: QP %u to RTR (peer QP %u) failed: %s (for RoCE check the "
                 "GID, MPIR_CVAR_CH4_GDR_GID_INDEX, and that the peer's address is reachable)",
                 dev->name, qp->qp_num, remote_qpn, strerror(errno));
        return -1;
    }

    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.timeout = timeout >= 1 && timeout <= 31 ? timeout : GDR_VERBS_QP_TIMEOUT_DEFAULT;
    attr.retry_cnt = QP_RETRY_CNT;
    attr.rnr_retry = QP_RNR_RETRY;
    attr.sq_psn = psn_of(qp->qp_num);
    attr.max_rd_atomic = init_rd_atom;
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
                      IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC) != 0) {
        snprintf(why, why_len, "%s: QP %u to RTS failed: %s", dev->name, qp->qp_num,
                 strerror(errno));
        return -1;
    }
    return 0;
}

/* The address of the port described by card, as the device addresses it. */
static void fill_ah(const gdr_verbs_device_t *dev, const gdr_verbs_card_t *card,
                    struct ibv_ah_attr *ah)
{
    memset(ah, 0, sizeof(*ah));
    ah->port_num = dev->port_num;
    if (dev->link_layer == IBV_LINK_LAYER_ETHERNET || card->lid == 0) {
        ah->is_global = 1;
        memcpy(ah->grh.dgid.raw, card->gid, 16);
        ah->grh.sgid_index = (uint8_t) (dev->gid_index < 0 ? 0 : dev->gid_index);
        ah->grh.hop_limit = 64;
    } else {
        ah->dlid = card->lid;
    }
}

struct ibv_qp *gdr_verbs_qp_create_ud(gdr_verbs_device_t *dev, struct ibv_cq *cq,
                                      uint32_t send_wr, uint32_t recv_wr, char *why,
                                      size_t why_len)
{
    struct ibv_qp_init_attr init;
    struct ibv_qp_attr attr;
    memset(&init, 0, sizeof(init));
    init.send_cq = cq;
    init.recv_cq = cq;
    init.qp_type = IBV_QPT_UD;
    init.cap.max_send_wr = send_wr;
    init.cap.max_recv_wr = recv_wr;
    init.cap.max_send_sge = 1;
    init.cap.max_recv_sge = 1;
    struct ibv_qp *qp = ibv_create_qp(dev->pd, &init);
    if (qp == NULL) {
        snprintf(why, why_len, "ibv_create_qp(%s, UD) failed: %s (gdr's lazy connections need "
                 "a UD queue pair per rank)", dev->name, strerror(errno));
        return NULL;
    }
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_INIT;
    attr.pkey_index = 0;
    attr.port_num = dev->port_num;
    attr.qkey = GDR_VERBS_UD_QKEY;
    const char *step = "INIT";
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
        goto fail;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTR;
    step = "RTR";
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE))
        goto fail;
    memset(&attr, 0, sizeof(attr));
    attr.qp_state = IBV_QPS_RTS;
    attr.sq_psn = psn_of(qp->qp_num);
    step = "RTS";
    if (ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN))
        goto fail;
    return qp;
  fail:
    snprintf(why, why_len, "%s: UD QP %u to %s failed: %s", dev->name, qp->qp_num, step,
             strerror(errno));
    ibv_destroy_qp(qp);
    return NULL;
}

struct ibv_ah *gdr_verbs_qp_ah(gdr_verbs_device_t *dev, const gdr_verbs_card_t *card,
                               int *unresolved, char *why, size_t why_len)
{
    struct ibv_ah_attr attr;
    fill_ah(dev, card, &attr);
    struct ibv_ah *ah = ibv_create_ah(dev->pd, &attr);
    /* the kernel's resolution timed out (ETIMEDOUT) or has not finished (ENODATA,
     * EAGAIN): the neighbour did not answer yet, which a busy or rebooting peer does */
    *unresolved = ah == NULL && (errno == ETIMEDOUT || errno == ENODATA || errno == EAGAIN);
    if (ah == NULL && *unresolved)
        snprintf(why, why_len, "%s: the peer's address did not resolve (%s: no ARP or "
                 "neighbour answer; check that its interface is up and reachable from here)",
                 dev->name, strerror(errno));
    else if (ah == NULL)
        snprintf(why, why_len, "%s: an address handle for a peer failed: %s (for RoCE check "
                 "the GID, MPIR_CVAR_CH4_GDR_GID_INDEX)", dev->name, strerror(errno));
    return ah;
}
