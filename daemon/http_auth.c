/*
 * HTTP Basic auth (RFC 7617): "Authorization: Basic base64(user:pass)",
 * checked as AUTH checks a pair (auth.h). Neither the header nor the
 * password is ever logged.
 */
#include "http_auth.h"

#include <string.h>
#include <strings.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "auth.h"
#include "config.h"
#include "http.h"

#define HTTP_AUTH_MAX    1024 /* bytes of credentials, decoded */
#define HTTP_AUTH_SCHEME "Basic "
#define HTTP_AUTH_REALM  "Basic realm=\"csq\", charset=\"UTF-8\""

static int
http_auth_b64(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int
http_auth_decode(const char *in, char *out, size_t cap)
{
	unsigned bits = 0, nbits = 0;
	size_t n = 0;
	int v;

	for (; *in != '\0' && *in != '='; in++) {
		if ((v = http_auth_b64((unsigned char)*in)) < 0)
			return -1;
		bits = bits << 6 | (unsigned)v;
		nbits += 6;
		if (nbits >= 8) {
			nbits -= 8;
			if (n == cap)
				return -1;
			out[n++] = (char)(bits >> nbits & 0xff);
		}
	}
	while (*in == '=')
		in++;
	return *in == '\0' ? (int)n : -1;
}

int
http_auth_ok(const struct config *cfg, struct evhttp_request *req)
{
	const char *h, *colon, *name;
	char cred[HTTP_AUTH_MAX];
	enum config_role role;
	int len;

	if (cfg->requirepass[0] == '\0' && cfg->nusers == 0)
		return 1;
	h = evhttp_find_header(evhttp_request_get_input_headers(req),
	                       "Authorization");
	if (h == NULL ||
	    strncasecmp(h, HTTP_AUTH_SCHEME, strlen(HTTP_AUTH_SCHEME)) != 0)
		return 0;
	h += strlen(HTTP_AUTH_SCHEME);
	while (*h == ' ')
		h++;
	if ((len = http_auth_decode(h, cred, sizeof(cred))) < 0 ||
	    (colon = memchr(cred, ':', (size_t)len)) == NULL)
		return 0;
	/* The pair AUTH would take, of a user whose role is admin. */
	return auth_check(cfg, cred, (size_t)(colon - cred), colon + 1,
	                  (size_t)(len - (colon - cred) - 1), &role,
	                  &name) == 0 &&
	       role == CONFIG_ROLE_ADMIN;
}

void
http_auth_challenge(struct evhttp_request *req)
{
	evhttp_add_header(evhttp_request_get_output_headers(req),
	                  "WWW-Authenticate", HTTP_AUTH_REALM);
	http_text(req, 401, "Unauthorized", "authentication required\n");
}
