def keep(n):
    return bytearray(n)


kept = [keep(100000 + i) for i in range(3)]
