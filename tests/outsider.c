/* A process outside an rma job that talks to one of its ranks through libfabric, as an attacker
 * on the same network would: it opens its own endpoint, puts the rank's published endpoint name
 * in its own address vector, and sends frames or posts one-sided operations at it. The rank has
 * never heard of it. Built and run by tests/test_hostile.py; what it does is only what any
 * libfabric program can do.
 *
 *   outsider PROVIDER NODE NAME_HEX write KEYS OFFSET DATA_HEX  fi_write DATA at OFFSET under each key
 *   outsider PROVIDER NODE NAME_HEX read KEYS OFFSET LENGTH     fi_read LENGTH bytes under each key
 *       (KEYS: a key, or FIRST-LAST for each key from FIRST to LAST)
 *   outsider PROVIDER NODE NAME_HEX send FRAME_HEX...           fi_send each frame as it is
 *   outsider PROVIDER NODE NAME_HEX fuzz COUNT SEED SOURCE      COUNT frames: random bytes, and
 *       fragment headers (32 bytes: source u32, handler u16, reserved u16, sequence, offset and
 *       total u64) that name rank SOURCE with wrapping offsets, short payloads, bad handler ids
 *       and sequence numbers near the next ones
 *
 * NODE is the address to bind ("" for the provider's default). Prints one line per operation:
 * "ok", "error <text>" (its completion reported a failure) or "timeout" (no completion within
 * 5 s), then for a read the bytes as hex. Exits 0 unless the endpoint could not be opened. */
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <sys/uio.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct fid_ep* ep;
static struct fid_cq* cq;
static fi_addr_t peer;

static void die(const char* call, int rc) {
  fprintf(stderr, "outsider: %s: %s\n", call, fi_strerror(-rc));
  exit(2);
}

static size_t unhex(const char* text, unsigned char* out, size_t room) {
  size_t n = strlen(text) / 2;
  if (n > room) n = room;
  for (size_t i = 0; i < n; ++i) sscanf(text + 2 * i, "%2hhx", &out[i]);
  return n;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* Waits for one completion; prints its outcome. */
static void complete(void) {
  double deadline = now() + 5;
  struct fi_cq_entry entry;
  for (;;) {
    ssize_t rc = fi_cq_read(cq, &entry, 1);
    if (rc == 1) {
      printf("ok\n");
      return;
    }
    if (rc == -FI_EAVAIL) {
      struct fi_cq_err_entry error = {0};
      fi_cq_readerr(cq, &error, 0);
      printf("error %s\n", fi_strerror(error.err));
      return;
    }
    if (now() > deadline) {
      printf("timeout\n");
      return;
    }
  }
}

/* Posts with fi_* until the provider takes it (it may want progress first). */
#define POST(call)                                       \
  do {                                                   \
    ssize_t rc_;                                         \
    double until_ = now() + 5;                           \
    struct fi_cq_entry spare_;                           \
    while ((rc_ = (call)) == -FI_EAGAIN && now() < until_) \
      fi_cq_read(cq, &spare_, 1);                       \
    if (rc_ != 0) {                                      \
      printf("error %s\n", fi_strerror(-rc_));           \
      break;                                             \
    }                                                    \
    complete();                                          \
  } while (0)

static void send_frame(const unsigned char* frame, size_t length) {
  static unsigned char buffer[65536];
  memcpy(buffer, frame, length);
  POST(fi_send(ep, buffer, length, NULL, peer, NULL));
}

static uint64_t state;
static uint64_t next_random(void) {
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return state;
}

static void fuzz(long count, uint64_t seed, uint32_t source) {
  state = seed | 1;
  static unsigned char frame[65536];
  static const uint64_t offsets[] = {0, 1, 4064, UINT64_MAX, UINT64_MAX - 100, UINT64_MAX - 4000, 1ull << 63};
  for (long i = 0; i < count; ++i) {
    size_t length = 32 + next_random() % 200;
    for (size_t b = 0; b < length; ++b) frame[b] = (unsigned char)next_random();
    if (i % 4 != 0) {
      /* Structure-aware: a header that names SOURCE and is wrong in one of its fields. */
      uint16_t handler = (uint16_t)(next_random() % 24);
      uint64_t sequence = next_random() % 8;
      uint64_t offset = offsets[next_random() % (sizeof offsets / sizeof offsets[0])];
      uint64_t total = next_random() % 3 == 0 ? length - 32 : next_random() % 100000;
      memcpy(frame, &source, 4);
      memcpy(frame + 4, &handler, 2);
      memset(frame + 6, 0, 2);
      memcpy(frame + 8, &sequence, 8);
      memcpy(frame + 16, &offset, 8);
      memcpy(frame + 24, &total, 8);
    }
    send_frame(frame, length);
  }
}

/* Opens an endpoint of its own and puts the rank's name in its address vector: a fresh
 * connection (tcp drops one on the first operation with a wrong key). The last one's resources
 * are left to the process's end. */
static void open_endpoint(char** argv) {
  struct fi_info* hints = fi_allocinfo();
  hints->caps = FI_MSG | FI_RMA;
  hints->ep_attr->type = FI_EP_RDM;
  hints->domain_attr->mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT;
  hints->domain_attr->av_type = FI_AV_TABLE;
  hints->fabric_attr->prov_name = strdup(argv[1]);
  const char* node = argv[2][0] ? argv[2] : NULL;
  struct fi_info* info;
  int rc = fi_getinfo(FI_VERSION(1, 17), node, NULL, node ? FI_SOURCE : 0, hints, &info);
  if (rc) die("fi_getinfo", rc);
  struct fid_fabric* fabric;
  struct fid_domain* domain;
  struct fid_av* av;
  if ((rc = fi_fabric(info->fabric_attr, &fabric, NULL))) die("fi_fabric", rc);
  if ((rc = fi_domain(fabric, info, &domain, NULL))) die("fi_domain", rc);
  struct fi_cq_attr cq_attr = {.size = 64, .format = FI_CQ_FORMAT_CONTEXT};
  if ((rc = fi_cq_open(domain, &cq_attr, &cq, NULL))) die("fi_cq_open", rc);
  struct fi_av_attr av_attr = {.type = FI_AV_TABLE};
  if ((rc = fi_av_open(domain, &av_attr, &av, NULL))) die("fi_av_open", rc);
  if ((rc = fi_endpoint(domain, info, &ep, NULL))) die("fi_endpoint", rc);
  if ((rc = fi_ep_bind(ep, &cq->fid, FI_TRANSMIT | FI_RECV))) die("fi_ep_bind", rc);
  if ((rc = fi_ep_bind(ep, &av->fid, 0))) die("fi_ep_bind", rc);
  if ((rc = fi_enable(ep))) die("fi_enable", rc);
  static unsigned char name[512];
  unhex(argv[3], name, sizeof name - 256); /* zero slack after it, as rma inserts names */
  if (fi_av_insert(av, name, 1, &peer, 0, NULL) != 1) die("fi_av_insert", -FI_EINVAL);
}


int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: outsider PROVIDER NODE NAME_HEX MODE ARGS...\n");
    return 2;
  }
  open_endpoint(argv);

  const char* mode = argv[4];
  static unsigned char data[65536];
  uint64_t first_key = 0, last_key = 0;
  if ((!strcmp(mode, "write") || !strcmp(mode, "read")) && argc == 8) {
    char* end;
    first_key = last_key = strtoull(argv[5], &end, 0);
    if (*end == '-') last_key = strtoull(end + 1, NULL, 0);
  }
  if (!strcmp(mode, "write") && argc == 8) {
    uint64_t offset = strtoull(argv[6], NULL, 0);
    size_t length = unhex(argv[7], data, sizeof data);
    /* Delivery-complete, as rma's writes: only then does the completion say what the target did. */
    struct iovec iov = {data, length};
    struct fi_rma_iov rma = {offset, length, 0};
    struct fi_msg_rma msg = {.msg_iov = &iov, .iov_count = 1, .addr = peer, .rma_iov = &rma, .rma_iov_count = 1};
    for (uint64_t key = first_key; key <= last_key; ++key) {
      if (key != first_key) open_endpoint(argv);
      rma.key = key;
      msg.addr = peer;
      POST(fi_writemsg(ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
    }
  } else if (!strcmp(mode, "read") && argc == 8) {
    uint64_t offset = strtoull(argv[6], NULL, 0);
    size_t length = strtoull(argv[7], NULL, 0);
    if (length > sizeof data) length = sizeof data;
    for (uint64_t key = first_key; key <= last_key; ++key) {
      if (key != first_key) open_endpoint(argv);
      memset(data, 0, length);
      POST(fi_read(ep, data, length, NULL, peer, offset, key, NULL));
      for (size_t i = 0; i < length; ++i) printf("%02x", data[i]);
      printf("\n");
    }
  } else if (!strcmp(mode, "send")) {
    for (int i = 5; i < argc; ++i) send_frame(data, unhex(argv[i], data, sizeof data));
  } else if (!strcmp(mode, "fuzz") && argc == 8) {
    fuzz(strtol(argv[5], NULL, 0), strtoull(argv[6], NULL, 0), (uint32_t)strtoul(argv[7], NULL, 0));
  } else {
    fprintf(stderr, "outsider: unknown mode or arguments\n");
    return 2;
  }
  fflush(stdout);
  return 0;
}
