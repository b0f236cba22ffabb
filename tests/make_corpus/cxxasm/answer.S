#if defined(__x86_64__) || defined(__aarch64__) || defined(__i386__)
        .text
        .globl answer
answer:
#if defined(__aarch64__)
        mov w0, #42
        ret
#else
        movl $42, %eax
        ret
#endif
#endif
        .section .note.GNU-stack,"",%progbits
