/*
 * What the socket programs share: the loopback brought up, an address on
 * it, and the port a socket is bound to.
 */
#ifndef SOCK_H
#define SOCK_H

#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* The reference VM's loopback starts down: bring it up (Tessera's is). */
static void loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	struct ifreq r;
	memset(&r, 0, sizeof r);
	strcpy(r.ifr_name, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &r) == 0) {
		r.ifr_flags |= IFF_UP;
		ioctl(s, SIOCSIFFLAGS, &r);
	}
	close(s);
}

static struct sockaddr_in loop_addr(int port)
{
	struct sockaddr_in a;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons(port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

static __attribute__((unused)) int port_of(int s)
{
	struct sockaddr_in a;
	socklen_t l = sizeof a;
	if (getsockname(s, (struct sockaddr *)&a, &l) < 0)
		return -1;
	return ntohs(a.sin_port);
}

/* A stream socket connected to 127.0.0.1:port, or -1. */
static __attribute__((unused)) int connect_to(int port)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loop_addr(port);
	if (connect(c, (struct sockaddr *)&a, sizeof a) < 0) {
		close(c);
		return -1;
	}
	return c;
}

#endif
