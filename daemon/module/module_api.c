/* The module API's functions, looked up by name (module_api.h). */
#include "module_api.h"

#define MODULE_API_DEFINE(ret, name, args) ret(*RM_##name) args;
MODULE_API_FUNCS(MODULE_API_DEFINE)
#undef MODULE_API_DEFINE

int
module_api_init(RedisModuleCtx *ctx)
{
	int (*get_api)(const char *, void *);

	/* The context's first word is GetApi itself. */
	get_api = (int (*)(const char *, void *))((void **)ctx)[0];
#define MODULE_API_GET(ret, name, args)                                        \
	if (get_api("RedisModule_" #name, (void *)&RM_##name) != RM_OK)        \
		return RM_ERR;
	MODULE_API_FUNCS(MODULE_API_GET)
#undef MODULE_API_GET
	return RM_OK;
}
