/* SPDX-License-Identifier: MIT */
#include "sandbox/planarena.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

static void *planarena_alloc(struct planarena *a, size_t n, bool *full)
{
	const size_t align = _Alignof(max_align_t);
	size_t at = (a->used + align - 1) & ~(align - 1);

	if (*full || at > a->size || n > a->size - at) {
		*full = true;
		return NULL;
	}
	a->used = at + n;
	return a->base + at;
}

static void *planarena_memdup(struct planarena *a, const void *p, size_t n, bool *full)
{
	if (!p)
		return NULL;
	void *copy = planarena_alloc(a, n ? n : 1, full);
	if (copy && n)
		memcpy(copy, p, n);
	return copy;
}

static char *planarena_str(struct planarena *a, const char *s, bool *full)
{
	return s ? planarena_memdup(a, s, strlen(s) + 1, full) : NULL;
}

/* n strings (any of them NULL), or up to the first NULL when n is SIZE_MAX;
 * the copy ends with a NULL either way. */
static char **planarena_strv(struct planarena *a, char *const *v, size_t n, bool *full)
{
	if (!v)
		return NULL;
	if (n == SIZE_MAX)
		for (n = 0; v[n]; n++)
			;
	char **copy = planarena_alloc(a, (n + 1) * sizeof(char *), full);
	if (!copy)
		return NULL;
	for (size_t i = 0; i < n; i++)
		copy[i] = planarena_str(a, v[i], full);
	copy[n] = NULL;
	return copy;
}

static struct sandbox_config *planarena_config(struct planarena *a, const struct sandbox_config *in,
					       bool *full)
{
	struct sandbox_config *c = planarena_memdup(a, in, sizeof(*in), full);
	if (!c)
		return NULL;
	/* The supervisor's own: never called by init. */
	c->on_output = NULL;
	c->on_started = NULL;
	c->on_watch = NULL;
	c->userdata = NULL;
	c->exec_path = planarena_str(a, in->exec_path, full);
	c->argv = planarena_strv(a, in->argv, SIZE_MAX, full);
	c->envp = planarena_strv(a, in->envp, SIZE_MAX, full);
	c->cwd = planarena_str(a, in->cwd, full);

	struct sandbox_isolation *iso = &c->isolation;
	const struct sandbox_isolation *from = &in->isolation;
	iso->workspace = planarena_str(a, from->workspace, full);
	struct sandbox_writable *w =
		planarena_memdup(a, from->writable, from->n_writable * sizeof(*w), full);
	for (size_t i = 0; w && i < from->n_writable; i++)
		w[i].path = planarena_str(a, from->writable[i].path, full);
	iso->writable = w;
	iso->overlay_upper = planarena_str(a, from->overlay_upper, full);
	iso->overlay_work = planarena_str(a, from->overlay_work, full);
	struct sandbox_mask *m = planarena_memdup(a, from->masks, from->n_masks * sizeof(*m), full);
	for (size_t i = 0; m && i < from->n_masks; i++)
		m[i] = (struct sandbox_mask){ .path = planarena_str(a, from->masks[i].path, full) };
	iso->masks = m;
	iso->hostname = planarena_str(a, from->hostname, full);
	/* Planned already: init reads the plan's staged paths. */
	iso->hide = NULL;
	iso->read_only = NULL;
	return c;
}

static void planarena_plan(struct planarena *a, struct isolate_plan *p,
			   const struct isolate_plan *in, bool *full)
{
	p->parent_uid_map = planarena_str(a, in->parent_uid_map, full);
	p->parent_gid_map = planarena_str(a, in->parent_gid_map, full);
	p->workspace = planarena_str(a, in->workspace, full);
	p->staged_workspace = planarena_str(a, in->staged_workspace, full);
	for (size_t i = 0; i < SANDBOX_MAX_WRITABLE; i++)
		p->staged_writable[i] = planarena_str(a, in->staged_writable[i], full);
	p->protect.workspace = planarena_str(a, in->protect.workspace, full);
	for (size_t i = 0; i < in->protect.n_mounts; i++)
		p->protect.mounts[i].path = planarena_str(a, in->protect.mounts[i].path, full);
	p->protect.enforced = NULL;
	for (size_t i = 0; i < PROTECT_MAX_MOUNTS; i++)
		p->staged_protect[i] = planarena_str(a, in->staged_protect[i], full);
	p->staged_hide = planarena_strv(a, in->staged_hide, in->n_hide, full);
	p->hide_is_dir = planarena_memdup(a, in->hide_is_dir, in->n_hide * sizeof(bool), full);
	p->enforced_hidden = NULL;
	for (size_t i = 0; i < SANDBOX_MAX_MASKS; i++)
		p->staged_mask[i] = planarena_str(a, in->staged_mask[i], full);
	for (size_t i = 0; i < in->n_expose; i++) {
		p->expose[i].host = planarena_str(a, in->expose[i].host, full);
		p->expose[i].staged = planarena_str(a, in->expose[i].staged, full);
	}
	p->enforced_exposed = NULL;
	p->filter.insns = planarena_memdup(a, in->filter.insns,
					   in->filter.len * sizeof(*in->filter.insns), full);
	p->filter.owned = false; /* the arena's */
}

int planarena_copy(struct planarena *arena, const struct child_setup *setup,
		   const struct child_setup **ret_setup)
{
	bool full = false;
	struct child_setup *s = planarena_memdup(arena, setup, sizeof(*setup), &full);
	struct sandbox_config *c = planarena_config(arena, setup->config, &full);
	struct isolate_plan *p = NULL;

	if (setup->plan) {
		p = planarena_memdup(arena, setup->plan, sizeof(*setup->plan), &full);
		if (p) {
			planarena_plan(arena, p, setup->plan, &full);
			p->iso = c ? &c->isolation : NULL;
		}
	}
	if (full || !s || !c)
		return -E2BIG;
	s->config = c;
	s->plan = p;
	*ret_setup = s;
	return 0;
}
