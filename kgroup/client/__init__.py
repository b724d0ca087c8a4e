"""kgroup.client"""
