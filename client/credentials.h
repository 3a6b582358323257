// How a client proves itself to a daemon, and how the connection is secured: a tenant's bearer
// token (sent with every call as "authorization: Bearer <token>") and TLS, mutual when the
// client has a certificate of its own. Used by RemoteDispatch and GetServerInfo.
#ifndef SLUICE_CLIENT_CREDENTIALS_H_
#define SLUICE_CLIENT_CREDENTIALS_H_

#include <string>

namespace sluice {

struct ClientCredentials {
  // The tenant's token; empty: none (a daemon without tenants).
  std::string token;
  // TLS to the daemon; any of the files below turns it on too.
  bool tls = false;
  // PEM file of the CA certificates the daemon's certificate must chain to; empty: the
  // system's roots.
  std::string tls_ca;
  // PEM files of this client's certificate and key, for a daemon that requires mutual TLS.
  std::string tls_cert;
  std::string tls_key;
  // The name the daemon's certificate must carry; empty: the target's host.
  std::string tls_server_name;

  bool uses_tls() const {
    return tls || !tls_ca.empty() || !tls_cert.empty() || !tls_key.empty();
  }
};

}  // namespace sluice

#endif  // SLUICE_CLIENT_CREDENTIALS_H_
