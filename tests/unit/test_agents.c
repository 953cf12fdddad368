/* SPDX-License-Identifier: MIT */
/* The agent hosts' table (core/agents/agenthost.h): what every row must
 * give, so that the hook, install and the quarantine can read any host
 * without naming it. */
#include <stdio.h>
#include <string.h>

#include "core/agents/agenthost.h"
#include "harness.h"

static size_t count(const char *const *list)
{
	size_t n = 0;

	while (list && list[n])
		n++;
	return n;
}

static void test_every_row_is_whole(void)
{
	ASSERT_TRUE(agenthost_count() > 0);
	ASSERT_TRUE(agenthost_count() <= AGENTHOST_MAX);
	ASSERT_TRUE(agenthost_at(agenthost_count()) == NULL);
	for (size_t i = 0; i < agenthost_count(); i++) {
		const struct agent_host *h = agenthost_at(i);
		ASSERT_TRUE(h && h->name && h->name[0] && h->display && h->agent);
		ASSERT_TRUE(h->routed_source && h->post_source);
		ASSERT_TRUE(count(h->shell_tools) > 0);
		ASSERT_TRUE(h->write_tools && h->read_tools);
		ASSERT_TRUE(count(h->project_dirs) > 0 && h->project_config && h->user_config);
		ASSERT_TRUE(h->credentials);
		ASSERT_TRUE(!h->home_env || (h->home_dir && h->home_config));
		ASSERT_TRUE(h->install_user_file && h->install_project_file);
		ASSERT_TRUE(h->install_user_base == AGENTHOST_BASE_USER ||
			    (h->install_user_base == AGENTHOST_BASE_HOST_HOME && h->home_env));
		ASSERT_TRUE(h->install_events && h->install_events[0].name);
		ASSERT_TRUE(h->install_timeout > 0);
		ASSERT_TRUE(h->settings && h->settings[0].path);
		ASSERT_TRUE(h->install_needs && h->exit_status && h->reply);
		/* One pre-tool hook, on every tool: the hook judges them all. */
		size_t pre = 0;
		for (const struct agenthost_install_event *e = h->install_events; e->name; e++)
			if (strcmp(e->event, "pre-tool-use") == 0) {
				pre++;
				ASSERT_TRUE(!e->matcher || strcmp(e->matcher, "*") == 0);
			} else {
				ASSERT_TRUE(strcmp(e->event, "post-tool-use") == 0 ||
					    strcmp(e->event, "stop") == 0);
			}
		ASSERT_EQ_INT(pre, 1);
	}
}

static void test_a_tool_has_one_kind(void)
{
	for (size_t i = 0; i < agenthost_count(); i++) {
		const struct agent_host *h = agenthost_at(i);
		for (size_t k = 0; h->shell_tools[k]; k++) {
			ASSERT_TRUE(!agenthost_tool_in(h->write_tools, h->shell_tools[k]));
			ASSERT_TRUE(!agenthost_tool_in(h->read_tools, h->shell_tools[k]));
		}
		for (size_t k = 0; h->write_tools[k]; k++)
			ASSERT_TRUE(!agenthost_tool_in(h->read_tools, h->write_tools[k]));
	}
}

static void test_names_find_each_host_once(void)
{
	const char *listed = agenthost_names(false), *bars = agenthost_names(true);
	size_t n_bars = 0;
	const struct agent_host *found;
	struct error err = { 0 };

	for (size_t i = 0; i < agenthost_count(); i++) {
		const struct agent_host *h = agenthost_at(i);
		ASSERT_TRUE(agenthost_find(h->name) == h);
		ASSERT_TRUE(strstr(listed, h->name) && strstr(bars, h->name));
		for (size_t j = 0; j < i; j++)
			ASSERT_TRUE(strcmp(agenthost_at(j)->name, h->name) != 0);
	}
	for (const char *p = bars; *p; p++)
		n_bars += *p == '|';
	ASSERT_EQ_INT(n_bars, agenthost_count() - 1);
	ASSERT_TRUE(agenthost_find("no-such-host") == NULL);
	ASSERT_TRUE(agenthost_find(NULL) == NULL);
	ASSERT_EQ_INT(agenthost_from_string("no-such-host", &found, &err), -22);
	ASSERT_TRUE(strstr(err.msg, listed) != NULL);
}

/* A refused tool is never an empty success, in any dialect. */
static void test_a_refusal_is_never_silent(void)
{
	for (size_t i = 0; i < agenthost_count(); i++) {
		const struct agent_host *h = agenthost_at(i);
		const struct agent_decision d = { .event = AGENT_EVENT_PRE_TOOL,
						  .block = true,
						  .message = "refused",
						  .event_name = "" };
		struct agent_reply r = { 0 };
		ASSERT_EQ_INT(h->reply(&d, &r), 0);
		ASSERT_TRUE(r.exit_status == 2 || (r.print && r.doc));
		json_decref(r.doc);
	}
}

RUN_TESTS(T_(test_every_row_is_whole), T_(test_a_tool_has_one_kind),
	  T_(test_names_find_each_host_once), T_(test_a_refusal_is_never_silent))
