// Who a connection comes from: the uid behind a loopback TCP peer, read from the kernel's
// socket table, and the client key a peer makes without tenants.
#include "sluice/server/grpc/peer_identity.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/temp_dir.h"

namespace sluice {
namespace {

// A loopback TCP connection made here: its client end's port, and the listener's.
struct Connection {
  int listener = -1;
  int client = -1;
  int accepted = -1;
  int server_port = 0;
  int client_port = 0;
  ~Connection() {
    for (int fd : {accepted, client, listener}) {
      if (fd >= 0) close(fd);
    }
  }
};

void Connect(int family, Connection& c) {
  c.listener = socket(family, SOCK_STREAM, 0);
  ASSERT_GE(c.listener, 0);
  sockaddr_storage address{};
  socklen_t length = 0;
  if (family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&address);
    in->sin_family = AF_INET;
    in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    length = sizeof(sockaddr_in);
  } else {
    auto* in6 = reinterpret_cast<sockaddr_in6*>(&address);
    in6->sin6_family = AF_INET6;
    in6->sin6_addr = in6addr_loopback;
    length = sizeof(sockaddr_in6);
  }
  ASSERT_EQ(bind(c.listener, reinterpret_cast<sockaddr*>(&address), length), 0);
  ASSERT_EQ(listen(c.listener, 1), 0);
  ASSERT_EQ(getsockname(c.listener, reinterpret_cast<sockaddr*>(&address), &length), 0);
  c.client = socket(family, SOCK_STREAM, 0);
  ASSERT_GE(c.client, 0);
  ASSERT_EQ(connect(c.client, reinterpret_cast<sockaddr*>(&address), length), 0);
  c.accepted = accept(c.listener, nullptr, nullptr);
  ASSERT_GE(c.accepted, 0);
  sockaddr_storage mine{};
  socklen_t mine_length = sizeof(mine);
  ASSERT_EQ(getsockname(c.client, reinterpret_cast<sockaddr*>(&mine), &mine_length), 0);
  if (family == AF_INET) {
    c.server_port = ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    c.client_port = ntohs(reinterpret_cast<sockaddr_in*>(&mine)->sin_port);
  } else {
    c.server_port = ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
    c.client_port = ntohs(reinterpret_cast<sockaddr_in6*>(&mine)->sin6_port);
  }
}

TEST(PeerIdentityTest, ALoopbackPeersUidIsTheOneTheKernelShowsForItsEnd) {
  Connection c;
  ASSERT_NO_FATAL_FAILURE(Connect(AF_INET, c));
  const std::string peer = absl::StrFormat("ipv4:127.0.0.1:%d", c.client_port);
  EXPECT_EQ(LoopbackPeerUid(peer, c.server_port), getuid());
  EXPECT_EQ(LoopbackPeerUid(peer, 0), getuid()) << "the daemon's port unknown yet";
  EXPECT_EQ(LoopbackPeerUid(peer, c.server_port == 65535 ? 1 : c.server_port + 1), std::nullopt)
      << "a connection to another port is not this daemon's";
}

bool HasIpv6Loopback() {
  const int fd = socket(AF_INET6, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  const bool bound = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return bound;
}

TEST(PeerIdentityTest, AnIpv6LoopbackPeerIsFoundInEitherSpellingOfItsAddress) {
  if (!HasIpv6Loopback()) GTEST_SKIP() << "this host has no IPv6 loopback";
  Connection c;
  ASSERT_NO_FATAL_FAILURE(Connect(AF_INET6, c));
  EXPECT_EQ(LoopbackPeerUid(absl::StrFormat("ipv6:[::1]:%d", c.client_port), c.server_port),
            getuid());
  EXPECT_EQ(LoopbackPeerUid(absl::StrFormat("ipv6:%%5B::1%%5D:%d", c.client_port),
                            c.server_port),
            getuid());
}

TEST(PeerIdentityTest, PeersThatAreNotLoopbackTcpOrMalformedHaveNoUid) {
  for (const char* peer : {"", "ipv4:", "ipv4:127.0.0.1", "ipv4:127.0.0.1:x", "ipv4:10.1.2.3:80",
                           "ipv6:[2001:db8::1]:80", "ipv6:::1:80", "unix:/tmp/s", "fd:7",
                           "ipv4:999.0.0.1:80", "ipv6:[::1:80"}) {
    EXPECT_EQ(LoopbackPeerUid(peer, 0), std::nullopt) << peer;
  }
}

TEST(PeerIdentityTest, TheTableIsReadAsTheKernelPrintsIt) {
  // Two rows: the client's end of 127.0.0.1:40000 -> 127.0.0.1:7450 (uid 1234), and the
  // daemon's end (uid 99); then an IPv6 row of ::1:40001 -> ::1:7450 (uid 4321), and lines a
  // parser must pass over.
  const testing::ScopedTempDir dir("sluice-peer-identity");
  const std::string v4 = dir.File("tcp"), v6 = dir.File("tcp6");
  std::ofstream(v4)
      << "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid\n"
         "   0: 0100007F:9C40 0100007F:1D1A 01 00000000:00000000 00:00000000 00000000  1234 0 1\n"
         "   1: 0100007F:1D1A 0100007F:9C40 01 00000000:00000000 00:00000000 00000000    99 0 2\n"
         "   2: garbage\n"
         "   3: 0100007G:9C40 0100007F:1D1A 01 00000000:00000000 00:00000000 00000000  1 0 3\n"
         "   4: 0100007F:9C42 0100007F:1D1A 06 00000000:00000000 00:00000000 00000000  0 0 0\n";
  std::ofstream(v6)
      << "  sl  local_address                         remote_address                        st\n"
         "   0: 00000000000000000000000001000000:9C41 00000000000000000000000001000000:1D1A "
         "01 00000000:00000000 00:00000000 00000000  4321 0 4\n";
  const std::vector<std::string> tables = {v4, v6};
  EXPECT_EQ(LoopbackPeerUid("ipv4:127.0.0.1:40000", 7450, tables), 1234u);
  EXPECT_EQ(LoopbackPeerUid("ipv4:127.0.0.1:7450", 40000, tables), 99u);
  EXPECT_EQ(LoopbackPeerUid("ipv6:[::1]:40001", 7450, tables), 4321u);
  EXPECT_EQ(LoopbackPeerUid("ipv4:127.0.0.1:40001", 7450, tables), std::nullopt);
  EXPECT_EQ(LoopbackPeerUid("ipv4:127.0.0.1:40002", 7450, tables), std::nullopt)
      << "a connection in TIME_WAIT has no owner";
  EXPECT_EQ(LoopbackPeerUid("ipv4:127.0.0.1:40000", 7451, tables), std::nullopt);
  EXPECT_EQ(LoopbackPeerUid("ipv4:127.0.0.1:40000", 7450, {dir.File("missing")}), std::nullopt);
}

TEST(PeerIdentityTest, AClientKeyIsItsHostAndUidAndNeverItsName) {
  EXPECT_EQ(PeerClientKey("ipv4:127.0.0.1:40000", 1000), "ipv4:127.0.0.1 uid 1000");
  EXPECT_EQ(PeerClientKey("ipv4:127.0.0.1:40001", 1000), "ipv4:127.0.0.1 uid 1000")
      << "another connection of the same user is the same client";
  EXPECT_EQ(PeerClientKey("ipv4:127.0.0.1:40000", std::nullopt), "ipv4:127.0.0.1");
  EXPECT_EQ(PeerClientKey("fd:12", 1000), "unix uid 1000");
  EXPECT_EQ(PeerClientKey("unix:", std::nullopt), "unix");
  EXPECT_NE(PeerClientKey("fd:12", 1000), PeerClientKey("fd:12", 1001));
}

TEST(PeerIdentityTest, UnixPeersAnswerForTheDescriptorsTheyAccepted) {
  UnixPeers peers;
  peers.Accepted(12, 1000);
  peers.Accepted(13, 1001);
  EXPECT_EQ(peers.UidOf("fd:12"), 1000u);
  EXPECT_EQ(peers.UidOf("fd:13"), 1001u);
  EXPECT_EQ(peers.UidOf("fd:14"), std::nullopt);
  EXPECT_EQ(peers.UidOf("fd:"), std::nullopt);
  EXPECT_EQ(peers.UidOf("ipv4:127.0.0.1:12"), std::nullopt);
  peers.Accepted(12, 1002);  // the descriptor closed and was taken by a new connection
  EXPECT_EQ(peers.UidOf("fd:12"), 1002u);
  EXPECT_EQ(peers.accepted(), 3u);
}

}  // namespace
}  // namespace sluice
