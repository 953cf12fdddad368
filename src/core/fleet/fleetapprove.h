/* SPDX-License-Identifier: MIT */
#pragma once

#include <jansson.h>
#include <stdint.h>

#include "basic/error.h"
#include "basic/sha256.h"
#include "core/fleet/fleetlog.h"
#include "core/gate/approver.h"
#include "core/permit/record.h"
#include "ledger/ledger.h"

/* Approving a permit of another host from one place (docs/fleet.md,
 * "Approving from one place"): the permit as the host's last
 * permit-transition entry in the mirror carries it, the message
 * permit_message_for_origin() makes of it with the host's log origin (what
 * the host will compare with its own permit's and its own origin), and the approval sent through schema version 3's
 * airlock.approve(). What the mirror holds is the hosts' word: the host
 * verifies the signature against its own permit and approver before it
 * commits anything (core/permit/mirrorapproval.h). */

struct fleetapprove_request {
	char *origin; /* the host's log */
	struct permit permit; /* its record, as the mirror's entry carries it */
	char *message; /* permit_message_for_origin() of it and origin: what is signed */
	/* The host's approver as its ledger pins it: the path and the SHA-256
	 * its last approver-enrol/approver-change entry names ("" when the
	 * mirror holds none). */
	char approver_path[LEDGER_PATH_MAX + 1];
	char approver_sha256[SHA256_HEX_SIZE];
	uint64_t signed_size; /* the host's checkpoint every line read was checked against */
};
void fleetapprove_release(struct fleetapprove_request *q);

/* Reads permit id of host from the mirror at conninfo (a role that may
 * read: airlock_approver), every line of the host's log checked against
 * its latest checkpoint signed by the key keys pins for its origin
 * (core/fleet/fleetlog.h). -ENOENT when the mirror holds no such host or
 * permit, or no record of it; -EKEYREJECTED when keys does not name the
 * host's log, or the permit's last transition or the approver's pin is not
 * a line of the tree the host signed (forged, not covered yet, or a log
 * that does not verify); -EPERM when its state is not one an approval is
 * for (DRY_RUN_OK, REJECTED_WITHOUT_APPROVAL); -ECONNREFUSED, -EPROTO as
 * fleet_load(). */
int fleetapprove_load(const char *conninfo, const char *host, uint64_t id,
		      const struct fleet_keys *keys, struct fleetapprove_request *ret,
		      struct error *err);

/* The approver document's bytes (a copy of the host's approver.json) as an
 * approver, when their SHA-256 is the one the host's ledger pins: -EACCES
 * otherwise (another approver's, or the host's replaced since). */
int fleetapprove_approver(const struct fleetapprove_request *q, const char *text, size_t n,
			  struct approver *ret, struct error *err);

/* Sends approval for permit id of host through airlock.approve() (the
 * role airlock_approver): its row id in *ret_row. */
int fleetapprove_send(const char *conninfo, const char *host, uint64_t id, json_t *approval,
		      uint64_t *ret_row, struct error *err);
