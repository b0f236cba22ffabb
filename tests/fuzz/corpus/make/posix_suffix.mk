# A POSIX-only makefile: .POSIX, suffix rules, no GNU extensions.
.POSIX:
.SUFFIXES:
.SUFFIXES: .c .o

CC = cc
CFLAGS = -O0
OBJS = wc.o count.o

all: wc

wc: $(OBJS)
	$(CC) $(LDFLAGS) -o wc $(OBJS)

.c.o:
	$(CC) $(CFLAGS) -c $<

wc.o count.o: count.h

test: wc
	./wc < count.c > wc.out
	test -s wc.out

clean:
	rm -f wc $(OBJS) wc.out
