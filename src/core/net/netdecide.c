/* SPDX-License-Identifier: MIT */
#include "core/net/netdecide.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

static void netdecide_refuse(struct netdecision *d, const char *rule, int status,
			     const struct nethead_request *req, const char *why)
{
	bool v6 = strchr(req->host, ':') != NULL;

	d->allowed = false;
	d->rule = rule;
	d->status = status;
	snprintf(d->message, sizeof(d->message), "airlock: %s%.200s%s:%u %s", v6 ? "[" : "",
		 req->host, v6 ? "]" : "", req->port, why);
}

void netdecide_request(const struct netallow *n, const struct nethead_request *req,
		       struct netdecision *ret)
{
	struct netallow_request r;
	struct netdecision d = { 0 };
	size_t idx = 0;

	if (netallow_request_parse(req->host, req->port, &r) < 0) {
		netdecide_refuse(&d, "net_bad_request", 400, req,
				 "is neither a host name nor an address literal");
		*ret = d;
		return;
	}
	switch (netallow_match(n, &r, &idx)) {
	case NETALLOW_ALLOWED:
		d.allowed = true;
		d.rule = "allow";
		(void)netallow_pattern_format(&n->allow[idx], d.pattern, sizeof(d.pattern));
		break;
	case NETALLOW_DENIED:
		(void)netallow_pattern_format(&n->deny[idx], d.pattern, sizeof(d.pattern));
		netdecide_refuse(&d, "net_deny", 403, req, "is denied by sandbox.net.deny");
		snprintf(d.message + strlen(d.message), sizeof(d.message) - strlen(d.message),
			 " ('%s')", d.pattern);
		break;
	case NETALLOW_NOT_ALLOWED:
	default:
		netdecide_refuse(&d, "net_not_allowed", 403, req,
				 r.is_addr ? "is an address no sandbox.net.allow range holds"
					   : "is not in sandbox.net.allow");
		break;
	}
	*ret = d;
}

bool netdecide_address(const struct netallow *n, const struct nethead_request *req,
		       const struct addrinfo *list, struct sockaddr_storage *ret_addr,
		       struct netdecision *ret)
{
	char first[INET6_ADDRSTRLEN] = "";
	const char *first_class = NULL;

	for (const struct addrinfo *ai = list; ai; ai = ai->ai_next) {
		const uint8_t *a;
		if (!ai->ai_addr || ai->ai_addrlen > sizeof(*ret_addr))
			continue;
		if (ai->ai_family == AF_INET && ai->ai_addrlen >= sizeof(struct sockaddr_in))
			a = (const uint8_t *)&((const struct sockaddr_in *)(const void *)ai->ai_addr)
				    ->sin_addr;
		else if (ai->ai_family == AF_INET6 && ai->ai_addrlen >= sizeof(struct sockaddr_in6))
			a = (const uint8_t *)&((const struct sockaddr_in6 *)(const void *)ai->ai_addr)
				    ->sin6_addr;
		else
			continue;
		if (netallow_address_allowed(n, ai->ai_family, a, req->port)) {
			memset(ret_addr, 0, sizeof(*ret_addr));
			memcpy(ret_addr, ai->ai_addr, ai->ai_addrlen);
			return true;
		}
		if (!first_class) {
			first_class = netallow_class_name(netallow_address_class(ai->ai_family, a));
			inet_ntop(ai->ai_family, a, first, sizeof(first));
		}
	}
	char why[200];
	if (first_class)
		snprintf(why, sizeof(why),
			 "resolves to %s (%s), which no sandbox.net.allow range holds", first,
			 first_class);
	else
		snprintf(why, sizeof(why), "resolves to no address");
	netdecide_refuse(ret, "net_address", 403, req, why);
	snprintf(ret->address, sizeof(ret->address), "%s", first);
	return false;
}

void netdecide_sni(const struct nethead_request *req, const char *sni, struct netdecision *ret)
{
	struct netallow_request r;
	size_t hl = strlen(req->host);

	if (netallow_request_parse(req->host, req->port, &r) == 0 && r.is_addr) {
		ret->allowed = true;
		return;
	}
	if (hl > 0 && req->host[hl - 1] == '.')
		hl--;
	size_t sl = sni ? strlen(sni) : 0;
	if (sl > 0 && sni[sl - 1] == '.')
		sl--;
	if (sni && sl > 0 && sl == hl && strncasecmp(sni, req->host, hl) == 0) {
		ret->allowed = true;
		return;
	}
	netdecide_refuse(ret, "net_sni", 403, req,
			 !sni	   ? "was not opened with a TLS ClientHello naming its server"
			 : sl == 0 ? "was opened by a TLS ClientHello without a server name"
				   : "was opened by a TLS ClientHello naming another server");
}

json_t *netconn_record_json(const struct netconn_record *r)
{
	json_t *o = json_pack("{s:s, s:i, s:s, s:b, s:s, s:I, s:I, s:I, s:I}", "host", r->host,
			      "port", (int)r->port, "method", r->method, "allowed", r->allowed,
			      "rule", r->rule ? r->rule : "", "bytes_out", (json_int_t)r->bytes_out,
			      "bytes_in", (json_int_t)r->bytes_in, "start_ms",
			      (json_int_t)r->start_ms, "duration_ms", (json_int_t)r->duration_ms);

	if (o && r->address[0] && json_object_set_new(o, "address", json_string(r->address)) < 0)
		goto fail;
	if (o && r->pattern[0] && json_object_set_new(o, "pattern", json_string(r->pattern)) < 0)
		goto fail;
	if (o && r->sni[0] && json_object_set_new(o, "sni", json_string(r->sni)) < 0)
		goto fail;
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* Why, and what to do, for one refused connection's rule; NULL: not the
 * policy's refusal (a bad request, a timeout, an upstream failure). */
static bool netdecide_denied_why(json_t *c, char *why, size_t size, const char **ret_hint)
{
	const char *rule = json_string_value(json_object_get(c, "rule"));
	const char *pattern = json_string_value(json_object_get(c, "pattern"));

	*ret_hint = "allow it in .airlock/policy.json sandbox.net.allow";
	if (!rule)
		return false;
	if (strcmp(rule, "net_not_allowed") == 0) {
		snprintf(why, size, "no allow rule");
	} else if (strcmp(rule, "net_deny") == 0) {
		snprintf(why, size, "deny rule %.300s", pattern ? pattern : "");
		*ret_hint = "it is in .airlock/policy.json sandbox.net.deny";
	} else if (strcmp(rule, "net_address") == 0) {
		snprintf(why, size, "it resolves to a loopback, link-local or private address");
		*ret_hint = "allow that address range in .airlock/policy.json sandbox.net.allow";
	} else if (strcmp(rule, "net_sni") == 0) {
		snprintf(why, size, "its TLS server name is not the CONNECT host");
		*ret_hint = "the client must name the host it asked for";
	} else {
		return false;
	}
	return true;
}

char *netdecide_denied_text(const json_t *network, size_t max)
{
	/* The records kept, then the summary of every one (a refusal among
	 * more connections than are kept: sandbox.network.summary.denied). */
	json_t *lists[2] = { json_object_get(network, "connections"),
			     json_object_get(json_object_get(network, "summary"), "denied") };
	json_t *c, *seen = json_object();
	char *text = NULL;
	size_t len = 0, shown = 0, more = 0, i;

	if (!seen)
		return NULL;
	for (int l = 0; l < 2; l++)
		json_array_foreach(lists[l], i, c) {
			const char *host = json_string_value(json_object_get(c, "host"));
			json_int_t port = json_integer_value(json_object_get(c, "port"));
			char why[400], key[320];
			const char *hint;
			if (!host || json_is_true(json_object_get(c, "allowed")) ||
			    !netdecide_denied_why(c, why, sizeof(why), &hint))
				continue;
			bool v6 = strchr(host, ':') != NULL;
			snprintf(key, sizeof(key), "%s%.256s%s:%lld", v6 ? "[" : "", host,
				 v6 ? "]" : "", (long long)port);
			if (json_object_get(seen, key))
				continue;
			json_object_set_new(seen, key, json_true());
			if (shown == max) {
				more++;
				continue;
			}
			char line[1200];
			int n = snprintf(line, sizeof(line), "%sdenied by net policy: %s (%s); %s",
					 len ? "\n" : "", key, why, hint);
			char *grown = realloc(text, len + (size_t)n + 1);
			if (!grown)
				break;
			memcpy(grown + len, line, (size_t)n + 1);
			text = grown;
			len += (size_t)n;
			shown++;
		}
	json_decref(seen);
	if (text && more) {
		char line[64];
		int n = snprintf(line, sizeof(line), "\n... and %zu more", more);
		char *grown = realloc(text, len + (size_t)n + 1);
		if (grown) {
			memcpy(grown + len, line, (size_t)n + 1);
			text = grown;
		}
	}
	return text;
}
