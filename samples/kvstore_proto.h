/* kvstore_proto.h: the key-value store sample's table and messages: slots in an RDMA-readable region (GET is an RDMA READ), PUT and DEL by message. */
#ifndef KVSTORE_PROTO_H
#define KVSTORE_PROTO_H

#include <stdint.h>
#include <string.h>

#include <easyrdma.h>

#define KV_MAGIC 0x4b565331u	/* "KVS1" */
#define KV_KEY_MAX 24
#define KV_VAL_MAX 88
#define KV_PROBE 8		/* slots tried from a key's hash (linear probing) */

enum { KV_EMPTY = 0, KV_USED = 1, KV_DELETED = 2 };

/* One slot, 128 bytes. version is a sequence lock: the server makes it odd
 * before it changes the slot and even again after, so a reader that sees
 * the same even version before and after its RDMA READ of the slot has a
 * copy that no write tore. */
struct kv_slot {
	uint64_t version;
	uint32_t state;		/* KV_EMPTY, KV_USED, KV_DELETED */
	uint16_t klen, vlen;
	char key[KV_KEY_MAX];
	char val[KV_VAL_MAX];
};
_Static_assert(sizeof(struct kv_slot) == 128, "a slot is 128 bytes");

/* What the server's reply to the connect carries (ez_conn_accept_data()):
 * the table's shape. Its key comes with the connection too, confined to
 * that connection (ez_conn_opts.exports, ez_conn_peer_exports()), so the
 * first GET needs no message. */
struct kv_hello {
	uint32_t magic;
	uint32_t nslots;
};

enum { KV_PUT = 1, KV_DEL = 2 };

struct kv_req {
	uint8_t op;
	uint8_t klen;
	uint16_t vlen;
	uint32_t id;
	char key[KV_KEY_MAX];
	char val[KV_VAL_MAX];
};

struct kv_rep {
	uint32_t id;
	int32_t status;		/* 0, -ENOENT (DEL of a missing key), -ENOSPC (no slot), -EINVAL */
	uint32_t slot;
	uint32_t pad;
	uint64_t version;	/* the slot's version after the change */
};

/* FNV-1a: both sides find a key's first slot the same way. */
static inline uint32_t kv_hash(const char *key, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (uint8_t)key[i]) * 16777619u;
	return h;
}

static inline int kv_key_is(const struct kv_slot *s, const char *key, size_t klen)
{
	return s->state == KV_USED && s->klen == klen && !memcmp(s->key, key, klen);
}

#endif
