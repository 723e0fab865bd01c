/*
 * The part of Redis's module API that csq.so uses, declared here from the
 * API's reference (https://redis.io/docs/reference/modules/modules-api-ref/)
 * since Debian ships no redismodule.h. Redis hands a module one function,
 * GetApi, in the first word of the context that RedisModule_OnLoad gets;
 * every other function is looked up by its name through it
 * (module_api_init). Only Redis >= 7.0's API is used.
 */
#ifndef CSQ_MODULE_API_H
#define CSQ_MODULE_API_H

#include <stddef.h>
#include <stdint.h>

#define RM_OK  0
#define RM_ERR 1

#define RM_APIVER_1 1
/* The layout of struct rm_type_methods below. */
#define RM_TYPE_METHOD_VERSION 4

#define RM_READ  (1 << 0)
#define RM_WRITE (1 << 1)

#define RM_KEYTYPE_EMPTY  0
#define RM_KEYTYPE_MODULE 6

/* RedisModule_CallReplyType (RESP2 replies: the ones csq.so asks for). */
#define RM_REPLY_STRING  0
#define RM_REPLY_ERROR   1
#define RM_REPLY_INTEGER 2
#define RM_REPLY_ARRAY   3
#define RM_REPLY_NULL    4

/* RedisModule_GetContextFlags */
#define RM_CTX_FLAGS_MASTER     (1 << 2)
#define RM_CTX_FLAGS_SLAVE      (1 << 3)
#define RM_CTX_FLAGS_REPLICATED (1 << 12)
#define RM_CTX_FLAGS_LOADING    (1 << 13)

/* Server events (RedisModule_SubscribeToServerEvent) and subevents. */
#define RM_EVENT_REPLICATION_ROLE_CHANGED   0
#define RM_EVENT_LOADING                    3
#define RM_SUBEVENT_LOADING_ENDED           3
#define RM_EVENT_REPLROLECHANGED_NOW_MASTER 0

typedef struct RedisModuleCtx RedisModuleCtx;
typedef struct RedisModuleKey RedisModuleKey;
typedef struct RedisModuleString RedisModuleString;
typedef struct RedisModuleIO RedisModuleIO;
typedef struct RedisModuleType RedisModuleType;
typedef struct RedisModuleDigest RedisModuleDigest;
typedef struct RedisModuleCallReply RedisModuleCallReply;
typedef uint64_t RedisModuleTimerID;

typedef int (*rm_cmd_fn)(RedisModuleCtx *, RedisModuleString **, int);
typedef void *(*rm_load_fn)(RedisModuleIO *, int encver);
typedef void (*rm_save_fn)(RedisModuleIO *, void *);
typedef void (*rm_rewrite_fn)(RedisModuleIO *, RedisModuleString *key, void *);
typedef size_t (*rm_mem_usage_fn)(const void *);
typedef void (*rm_digest_fn)(RedisModuleDigest *, void *);
typedef void (*rm_free_fn)(void *);
typedef void (*rm_timer_fn)(RedisModuleCtx *, void *);

struct rm_event {
	uint64_t id;
	uint64_t dataver;
};
typedef void (*rm_event_fn)(RedisModuleCtx *, struct rm_event, uint64_t sub,
                            void *data);

/* A data type's callbacks, version RM_TYPE_METHOD_VERSION: the order of
 * its members is the API's; those csq leaves NULL are typed void *. */
struct rm_type_methods {
	uint64_t version;
	rm_load_fn rdb_load;
	rm_save_fn rdb_save;
	rm_rewrite_fn aof_rewrite;
	rm_mem_usage_fn mem_usage;
	rm_digest_fn digest;
	rm_free_fn free;
	void *aux_load, *aux_save;
	int aux_save_triggers;
	void *free_effort, *unlink, *copy, *defrag;
	void *mem_usage2, *free_effort2, *unlink2, *copy2;
};

/* Each is looked up by its name, "RedisModule_" and what follows rm_. */
#define MODULE_API_FUNCS(X)                                                    \
	X(void *, Alloc, (size_t))                                             \
	X(void *, Calloc, (size_t, size_t))                                    \
	X(void *, Realloc, (void *, size_t))                                   \
	X(void, Free, (void *))                                                \
	X(size_t, MallocSize, (void *))                                        \
	X(int, CreateCommand,                                                  \
	  (RedisModuleCtx *, const char *, rm_cmd_fn, const char *, int, int,  \
	   int))                                                               \
	X(void, SetModuleAttribs, (RedisModuleCtx *, const char *, int, int))  \
	X(int, IsModuleNameBusy, (const char *))                               \
	X(int, WrongArity, (RedisModuleCtx *))                                 \
	X(int, ReplyWithLongLong, (RedisModuleCtx *, long long))               \
	X(int, ReplyWithError, (RedisModuleCtx *, const char *))               \
	X(int, ReplyWithSimpleString, (RedisModuleCtx *, const char *))        \
	X(int, ReplyWithArray, (RedisModuleCtx *, long))                       \
	X(int, ReplyWithStringBuffer,                                          \
	  (RedisModuleCtx *, const char *, size_t))                            \
	X(const char *, StringPtrLen, (const RedisModuleString *, size_t *))   \
	X(RedisModuleString *, CreateString,                                   \
	  (RedisModuleCtx *, const char *, size_t))                            \
	X(RedisModuleString *, CreateStringFromLongLong,                       \
	  (RedisModuleCtx *, long long))                                       \
	X(void, FreeString, (RedisModuleCtx *, RedisModuleString *))           \
	X(void, RetainString, (RedisModuleCtx *, RedisModuleString *))         \
	X(RedisModuleKey *, OpenKey,                                           \
	  (RedisModuleCtx *, RedisModuleString *, int))                        \
	X(void, CloseKey, (RedisModuleKey *))                                  \
	X(int, KeyType, (RedisModuleKey *))                                    \
	X(RedisModuleType *, CreateDataType,                                   \
	  (RedisModuleCtx *, const char *, int, struct rm_type_methods *))     \
	X(int, ModuleTypeSetValue,                                             \
	  (RedisModuleKey *, RedisModuleType *, void *))                       \
	X(RedisModuleType *, ModuleTypeGetType, (RedisModuleKey *))            \
	X(void *, ModuleTypeGetValue, (RedisModuleKey *))                      \
	X(void, SaveUnsigned, (RedisModuleIO *, uint64_t))                     \
	X(uint64_t, LoadUnsigned, (RedisModuleIO *))                           \
	X(void, SaveStringBuffer, (RedisModuleIO *, const char *, size_t))     \
	X(char *, LoadStringBuffer, (RedisModuleIO *, size_t *))               \
	X(int, IsIOError, (RedisModuleIO *))                                   \
	X(void, EmitAOF, (RedisModuleIO *, const char *, const char *, ...))   \
	X(int, Replicate, (RedisModuleCtx *, const char *, const char *, ...)) \
	X(int, PublishMessage,                                                 \
	  (RedisModuleCtx *, RedisModuleString *, RedisModuleString *))        \
	X(long long, Milliseconds, (void))                                     \
	X(RedisModuleTimerID, CreateTimer,                                     \
	  (RedisModuleCtx *, long long, rm_timer_fn, void *))                  \
	X(int, StopTimer, (RedisModuleCtx *, RedisModuleTimerID, void **))     \
	X(int, GetContextFlags, (RedisModuleCtx *))                            \
	X(void, Log, (RedisModuleCtx *, const char *, const char *, ...))      \
	X(void, LogIOError,                                                    \
	  (RedisModuleIO *, const char *, const char *, ...))                  \
	X(int, SubscribeToServerEvent,                                         \
	  (RedisModuleCtx *, struct rm_event, rm_event_fn))                    \
	X(int, SelectDb, (RedisModuleCtx *, int))                              \
	X(int, GetSelectedDb, (RedisModuleCtx *))                              \
	X(const RedisModuleString *, GetKeyNameFromIO, (RedisModuleIO *))      \
	X(int, GetDbIdFromIO, (RedisModuleIO *))                               \
	X(void, DigestAddStringBuffer,                                         \
	  (RedisModuleDigest *, const char *, size_t))                         \
	X(void, DigestEndSequence, (RedisModuleDigest *))                      \
	X(RedisModuleCallReply *, Call,                                        \
	  (RedisModuleCtx *, const char *, const char *, ...))                 \
	X(int, CallReplyType, (RedisModuleCallReply *))                        \
	X(size_t, CallReplyLength, (RedisModuleCallReply *))                   \
	X(RedisModuleCallReply *, CallReplyArrayElement,                       \
	  (RedisModuleCallReply *, size_t))                                    \
	X(const char *, CallReplyStringPtr,                                    \
	  (RedisModuleCallReply *, size_t *))                                  \
	X(long long, CallReplyInteger, (RedisModuleCallReply *))               \
	X(void, FreeCallReply, (RedisModuleCallReply *))

#define MODULE_API_DECLARE(ret, name, args) extern ret(*RM_##name) args;
MODULE_API_FUNCS(MODULE_API_DECLARE)
#undef MODULE_API_DECLARE

/* Looks every function up; RM_ERR when one is missing (Redis < 7.0). */
int module_api_init(RedisModuleCtx *);

#endif
