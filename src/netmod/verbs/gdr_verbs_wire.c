#include "gdr_verbs_wire.h"

#include <string.h>

_Static_assert(sizeof(gdr_verbs_wire_hdr_t) == 24, "wire header is 24 bytes");
_Static_assert(sizeof(gdr_verbs_wire_rts_t) == 24, "RTS body is 24 bytes");

static size_t body_size(gdr_verbs_msg_kind_t kind, uint64_t data_sz)
{
    switch (kind) {
        case GDR_VERBS_MSG_EAGER:
            return (size_t) data_sz;
        case GDR_VERBS_MSG_RTS:
            return sizeof(gdr_verbs_wire_rts_t);
        case GDR_VERBS_MSG_FIN:
            return sizeof(gdr_verbs_wire_fin_t);
        case GDR_VERBS_MSG_CREDIT:
            return 0;
    }
    return 0;
}

size_t gdr_verbs_wire_size(gdr_verbs_msg_kind_t kind, size_t am_hdr_sz, uint64_t data_sz)
{
    return sizeof(gdr_verbs_wire_hdr_t) + gdr_verbs_wire_pad8(am_hdr_sz) + body_size(kind, data_sz);
}

size_t gdr_verbs_wire_put_hdr(void *buf, size_t cap, gdr_verbs_msg_kind_t kind,
                              uint32_t handler_id, uint16_t credits, const void *am_hdr,
                              size_t am_hdr_sz, uint64_t data_sz)
{
    gdr_verbs_wire_hdr_t h;
    size_t body_at = sizeof(h) + gdr_verbs_wire_pad8(am_hdr_sz);

    if (am_hdr_sz > UINT32_MAX || gdr_verbs_wire_size(kind, am_hdr_sz, data_sz) > cap)
        return 0;
    memset(&h, 0, sizeof(h));
    h.magic = GDR_VERBS_WIRE_MAGIC;
    h.kind = (uint8_t) kind;
    h.handler_id = handler_id;
    h.credits = credits;
    h.am_hdr_sz = (uint32_t) am_hdr_sz;
    h.data_sz = data_sz;
    memcpy(buf, &h, sizeof(h));
    if (am_hdr_sz > 0)
        memcpy((char *) buf + sizeof(h), am_hdr, am_hdr_sz);
    return body_at;
}

gdr_verbs_wire_status_t gdr_verbs_wire_parse(const void *buf, size_t len, gdr_verbs_msg_t *msg)
{
    gdr_verbs_wire_hdr_t h;
    const char *p = buf;

    if (len < sizeof(h))
        return GDR_VERBS_WIRE_SHORT;
    memcpy(&h, p, sizeof(h));
    if (h.magic != GDR_VERBS_WIRE_MAGIC)
        return GDR_VERBS_WIRE_BAD_MAGIC;
    if (h.kind < GDR_VERBS_MSG_EAGER || h.kind > GDR_VERBS_MSG_CREDIT)
        return GDR_VERBS_WIRE_BAD_KIND;

    /* sizes checked before any addition can overflow */
    size_t rest = len - sizeof(h);
    if (h.am_hdr_sz > rest)
        return GDR_VERBS_WIRE_SHORT;
    size_t hdr_padded = gdr_verbs_wire_pad8(h.am_hdr_sz);
    if (hdr_padded > rest)
        return GDR_VERBS_WIRE_SHORT;
    rest -= hdr_padded;
    if (h.kind == GDR_VERBS_MSG_EAGER && h.data_sz > rest)
        return GDR_VERBS_WIRE_SHORT;
    size_t body = body_size((gdr_verbs_msg_kind_t) h.kind, h.data_sz);
    if (body > rest)
        return GDR_VERBS_WIRE_SHORT;
    if (body < rest)
        return GDR_VERBS_WIRE_TRAILING;

    memset(msg, 0, sizeof(*msg));
    msg->kind = (gdr_verbs_msg_kind_t) h.kind;
    msg->handler_id = h.handler_id;
    msg->credits = h.credits;
    msg->am_hdr = h.am_hdr_sz ? p + sizeof(h) : NULL;
    msg->am_hdr_sz = h.am_hdr_sz;
    msg->data_sz = h.data_sz;
    const char *b = p + sizeof(h) + hdr_padded;
    switch (msg->kind) {
        case GDR_VERBS_MSG_EAGER:
            msg->data = h.data_sz ? b : NULL;
            break;
        case GDR_VERBS_MSG_RTS:
            memcpy(&msg->rts, b, sizeof(msg->rts));
            break;
        case GDR_VERBS_MSG_FIN:{
                gdr_verbs_wire_fin_t fin;
                memcpy(&fin, b, sizeof(fin));
                msg->cookie = fin.cookie;
                break;
            }
        case GDR_VERBS_MSG_CREDIT:
            break;
    }
    return GDR_VERBS_WIRE_OK;
}

const char *gdr_verbs_wire_str(gdr_verbs_wire_status_t status)
{
    switch (status) {
        case GDR_VERBS_WIRE_OK:
            return "well-formed";
        case GDR_VERBS_WIRE_SHORT:
            return "message shorter than its header says";
        case GDR_VERBS_WIRE_BAD_MAGIC:
            return "not a gdr message (bad magic)";
        case GDR_VERBS_WIRE_BAD_KIND:
            return "unknown message kind";
        case GDR_VERBS_WIRE_TRAILING:
            return "message longer than its header says";
    }
    return "unknown wire status";
}
