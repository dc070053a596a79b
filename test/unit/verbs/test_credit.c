/* Credit flow control: a sender never posts more SENDs than the receiver has
 * buffers, and two peers that both run dry still unblock each other. */
#include "gdr_unit.h"
#include "verbs/gdr_verbs_credit.h"

int main(void)
{
    gdr_verbs_credit_t a, b;
    gdr_verbs_credit_init(&a, 8);
    gdr_verbs_credit_init(&b, 8);

    int sent = 0;
    while (gdr_verbs_credit_can_send_data(&a)) {
        gdr_verbs_credit_on_send(&a);
        sent++;
    }
    GDR_CHECK(sent == 7, "a fresh sender posts depth-1 = 7 data messages, keeps 1 (%d)", sent);
    GDR_CHECK(a.send_credits == 1, "one credit kept for a CREDIT message");

    /* b receives and re-posts the 7 buffers */
    for (int i = 0; i < 7; i++)
        gdr_verbs_credit_on_reposted(&b);
    GDR_CHECK(gdr_verbs_credit_want_update(&b), "b owes 7 >= depth/2: wants to send an update");
    uint16_t back = gdr_verbs_credit_on_send(&b);
    GDR_CHECK(back == 7 && b.to_return == 0, "the update carries all 7 owed credits");
    gdr_verbs_credit_on_returned(&a, back);
    GDR_CHECK(a.send_credits == 8 && gdr_verbs_credit_can_send_data(&a),
              "a can send again (credits back to depth)");

    /* few owed credits wait for a piggyback */
    gdr_verbs_credit_init(&b, 8);
    gdr_verbs_credit_on_reposted(&b);
    GDR_CHECK(!gdr_verbs_credit_want_update(&b), "1 owed credit: no dedicated update");
    GDR_CHECK(gdr_verbs_credit_on_send(&b) == 1, "it rides on the next data message");

    /* both dry: each sends depth-1 before seeing anything from the other */
    gdr_verbs_credit_init(&a, 4);
    gdr_verbs_credit_init(&b, 4);
    uint32_t a_piggy = 0, b_piggy = 0;
    for (int i = 0; i < 3; i++) {
        a_piggy += gdr_verbs_credit_on_send(&a);
        b_piggy += gdr_verbs_credit_on_send(&b);
    }
    GDR_CHECK(!gdr_verbs_credit_can_send_data(&a) && !gdr_verbs_credit_can_send_data(&b),
              "both sides out of data credits");
    /* each then receives the other's 3 messages and re-posts the buffers */
    gdr_verbs_credit_on_returned(&a, b_piggy);
    gdr_verbs_credit_on_returned(&b, a_piggy);
    for (int i = 0; i < 3; i++) {
        gdr_verbs_credit_on_reposted(&a);
        gdr_verbs_credit_on_reposted(&b);
    }
    GDR_CHECK(gdr_verbs_credit_want_update(&a) && gdr_verbs_credit_want_update(&b),
              "both send a CREDIT message with the credit they kept");
    gdr_verbs_credit_on_returned(&b, gdr_verbs_credit_on_send(&a));
    GDR_CHECK(gdr_verbs_credit_can_send_data(&b) && b.send_credits == 4,
              "a's update unblocks b (4 credits)");

    /* a confused peer cannot inflate credits past depth */
    gdr_verbs_credit_init(&a, 4);
    gdr_verbs_credit_on_returned(&a, 1000);
    GDR_CHECK(a.send_credits == 4, "credits never exceed depth (%u)", a.send_credits);
    return gdr_unit_finish();
}
