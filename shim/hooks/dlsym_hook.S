/* Our exported dlsym.
 *
 * glibc's dlsym reads its caller's return address to decide what RTLD_NEXT
 * and RTLD_DEFAULT mean. A C wrapper would make every such look-up look as
 * if it came from libgpumemrec.so. So pseudo-handles are sent on with a tail
 * jump (the return address on the stack is still the original caller's) and
 * only explicit-handle look-ups go through C (gpumemrec_dlsym_explicit),
 * where a result may be swapped for our wrapper. */
        .text
        .globl  dlsym
        .type   dlsym, @function
dlsym:
        .cfi_startproc
        testq   %rdi, %rdi              /* RTLD_DEFAULT == 0 */
        je      .Ldefault
        cmpq    $-1, %rdi               /* RTLD_NEXT == -1 */
        je      .Lpseudo
        jmp     gpumemrec_dlsym_explicit
.Ldefault:
        /* RTLD_DEFAULT and one of our hooked names: the global scope's answer
         * is our own export even when no GPU library defines the function
         * (hardening: a program probing for a function must not find one
         * only because we are loaded). gpumemrec_dlsym_default_fixup(name,
         * &out) answers 1 with *out set, or 0: ask glibc (tail jump). */
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $24, %rsp
        .cfi_adjust_cfa_offset 24
        movq    %rsi, %rdi
        movq    %rsp, %rsi
        call    gpumemrec_dlsym_default_fixup
        testl   %eax, %eax
        jne     .Lhandled
        addq    $24, %rsp
        .cfi_adjust_cfa_offset -24
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        jmp     .Lpseudo
.Lhandled:
        .cfi_adjust_cfa_offset 40
        movq    (%rsp), %rax
        addq    $40, %rsp
        .cfi_adjust_cfa_offset -40
        ret
.Lpseudo:
        movq    gpumemrec_real_dlsym_ptr(%rip), %rax
        testq   %rax, %rax
        je      .Lresolve
        jmp     *%rax
.Lresolve:
        pushq   %rdi
        .cfi_adjust_cfa_offset 8
        pushq   %rsi
        .cfi_adjust_cfa_offset 8
        subq    $8, %rsp
        .cfi_adjust_cfa_offset 8
        call    gpumemrec_resolve_real_dlsym
        addq    $8, %rsp
        .cfi_adjust_cfa_offset -8
        popq    %rsi
        .cfi_adjust_cfa_offset -8
        popq    %rdi
        .cfi_adjust_cfa_offset -8
        testq   %rax, %rax
        je      .Lnone
        jmp     *%rax
.Lnone:
        xorl    %eax, %eax
        ret
        .cfi_endproc
        .size   dlsym, .-dlsym

        .section .note.GNU-stack,"",@progbits
