/* SPDX-License-Identifier: MIT */
#include "core/store/statepath.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The longest: dryruns/<20 digits>/changeset.json, policies/<64>.json. */
_Static_assert(sizeof(STATEPATH_DRYRUNS "/18446744073709551615/" STATEPATH_CHANGESET) <= STATEPATH_MAX,
	       "a dry run's path fits");
_Static_assert(sizeof(STATEPATH_POLICIES "/") + SHA256_HEX_SIZE + sizeof(".json") <= STATEPATH_MAX,
	       "a policy approval's path fits");

static struct statepath statepath_id(const char *dir, uint64_t id, const char *suffix)
{
	struct statepath p;

	snprintf(p.s, sizeof(p.s), "%s/%llu%s", dir, (unsigned long long)id, suffix);
	return p;
}

static struct statepath statepath_key(const char *dir, const char *text, const char *suffix)
{
	struct statepath p;
	char hex[SHA256_HEX_SIZE];

	sha256_hex(text, strlen(text), hex);
	snprintf(p.s, sizeof(p.s), "%s/%.32s%s", dir, hex, suffix);
	return p;
}

struct statepath statepath_receipt(uint64_t id)
{
	return statepath_id(STATEPATH_RECEIPTS, id, ".json");
}

int statepath_receipt_text(const char *id, struct statepath *ret)
{
	int n = snprintf(ret->s, sizeof(ret->s), STATEPATH_RECEIPTS "/%s.json", id);

	return n < 0 || (size_t)n >= sizeof(ret->s) ? -ENAMETOOLONG : 0;
}

struct statepath statepath_quarantine(uint64_t id)
{
	return statepath_id(STATEPATH_QUARANTINE, id, "");
}

struct statepath statepath_dryrun(uint64_t id)
{
	return statepath_id(STATEPATH_DRYRUNS, id, "");
}

struct statepath statepath_dryrun_changeset(uint64_t id)
{
	return statepath_id(STATEPATH_DRYRUNS, id, "/" STATEPATH_CHANGESET);
}

struct statepath statepath_dryrun_state(uint64_t id)
{
	return statepath_id(STATEPATH_DRYRUNS, id, "/" STATEPATH_STATE);
}

struct statepath statepath_permit(uint64_t id)
{
	return statepath_id(STATEPATH_PERMITS, id, STATEPATH_PERMIT_SUFFIX);
}

struct statepath statepath_permit_name(uint64_t id)
{
	struct statepath p;

	snprintf(p.s, sizeof(p.s), "%llu" STATEPATH_PERMIT_SUFFIX, (unsigned long long)id);
	return p;
}

struct statepath statepath_permit_lock_name(uint64_t id)
{
	struct statepath p;

	snprintf(p.s, sizeof(p.s), "%llu.lock", (unsigned long long)id);
	return p;
}

struct statepath statepath_policy(const char sha256[SHA256_HEX_SIZE])
{
	struct statepath p;

	snprintf(p.s, sizeof(p.s), STATEPATH_POLICIES "/%.64s.json", sha256);
	return p;
}

struct statepath statepath_gate_open(const char *scope)
{
	return statepath_key(STATEPATH_GATE_OPEN, scope, "");
}

struct statepath statepath_gate_open_entry(const char *scope, uint64_t id)
{
	struct statepath p;
	char hex[SHA256_HEX_SIZE];

	sha256_hex(scope, strlen(scope), hex);
	snprintf(p.s, sizeof(p.s), STATEPATH_GATE_OPEN "/%.32s/%llu.json", hex, (unsigned long long)id);
	return p;
}

struct statepath statepath_gate_closed(uint64_t id)
{
	return statepath_id(STATEPATH_GATE_CLOSED, id, ".json");
}

struct statepath statepath_gate_stop(const char *session)
{
	return statepath_key(STATEPATH_GATE_STOP, session, ".json");
}
