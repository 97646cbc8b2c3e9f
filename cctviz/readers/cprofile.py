"""(reader being written this session)"""
