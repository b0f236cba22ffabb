# GNU make features a larger project uses: static pattern rules, target-
# and pattern-specific variables, define/call/eval to make rules per
# program, foreach, vpath, $(shell), a :: hook, .DELETE_ON_ERROR, export.
.DELETE_ON_ERROR:
.PHONY: all clean check
vpath %.c src
vpath %.sh tools

PROGS   := alpha beta
CFLAGS  ?= -O0
STAMP   != echo built-by-make
export GREETING = hello

all: $(PROGS) report.txt

# one link rule per program, made by a template
define PROG_template
$(1): $(1).o common.o
	$$(CC) $$(LDFLAGS) -o $$@ $$^
$(1).o: CPPFLAGS += -DNAME='"$(1)"'
endef
$(foreach p,$(PROGS),$(eval $(call PROG_template,$(p))))

OBJS := $(addsuffix .o,$(PROGS)) common.o
$(OBJS): %.o: %.c common.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

common.o: CFLAGS += -DCOMMON=1

report.txt: gen.sh $(PROGS)
	sh $< $(STAMP) $(words $(PROGS)) > $@

check:: all
	./alpha
check::
	./beta
	@echo "$$GREETING from the environment"

clean:
	rm -f $(PROGS) $(OBJS) report.txt
