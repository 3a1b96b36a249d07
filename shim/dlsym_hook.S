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
        je      .Lpseudo
        cmpq    $-1, %rdi               /* RTLD_NEXT == -1 */
        je      .Lpseudo
        jmp     gpumemrec_dlsym_explicit
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
