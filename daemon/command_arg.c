/*
 * The argument helpers of the command handlers (command_arg.h).
 */
#include "command_arg.h"

#include <string.h>
#include <strings.h>

#include "client.h"
#include "resp.h"

#define NAME_ECHO_MAX 128 /* bytes of an unknown command echoed back */

/* Redis's arity error, for too few arguments, or for more than a
 * command's positional ones when it has no options beside (as LRANGE). */
void
command_arg_arity_error(struct evbuffer *out, const char *name)
{
	resp_error(out, "ERR wrong number of arguments for '%s' command", name);
}

/* How much of argument i an error quotes back: at most NAME_ECHO_MAX. */
int
command_arg_echo_len(const struct resp_request *req, int i)
{
	return (int)(req->argvlen[i] > NAME_ECHO_MAX ? NAME_ECHO_MAX
	                                             : req->argvlen[i]);
}

int
command_arg_is(const struct resp_request *req, int i, const char *word)
{
	return req->argvlen[i] == strlen(word) &&
	       strncasecmp(req->argv[i], word, req->argvlen[i]) == 0;
}

int
command_arg_parse_int(const char *s, size_t len, int64_t *out)
{
	return op_args_parse_int(s, len, out);
}

/* An integer argument within [min, max]; replies the error otherwise. */
int
command_arg_int(struct client *c, const struct resp_request *req, int i,
                int64_t min, int64_t max, int64_t *out)
{
	if (command_arg_parse_int(req->argv[i], req->argvlen[i], out) != 0 ||
	    *out < min || *out > max) {
		resp_error(client_output(c), ERR_RANGE);
		return -1;
	}
	return 0;
}

int
command_arg_id(struct client *c, const struct resp_request *req, int i,
               enum csq_status invalid)
{
	if (csq_valid_id(req->argv[i], req->argvlen[i]))
		return 0;
	resp_error(client_output(c), "%s", csq_status_text(invalid));
	return -1;
}
